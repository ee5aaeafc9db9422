"""Wake this browser session from another thread: the process-wide VersionWatch calls it when the session's
class moved, so a follower's page reruns within a watcher pass instead of polling every second.

Streamlit has no public API for this; it is what its own run-on-save does (``AppSession.request_rerun`` with
the session's last client state), scheduled on the session's event loop. Where that is not available (a bare test
run, another Streamlit), ``waker()`` is None and the page keeps its one-second poll.
"""

from __future__ import annotations

from typing import Callable, Optional

import streamlit as st
from streamlit.proto.ClientState_pb2 import ClientState

from pykv.classroom.watch import VersionWatch


@st.cache_resource(show_spinner=False)
def watcher(_version: Callable[[str], Optional[int]]) -> VersionWatch:
    """The process's one watcher over ``_version`` (the class registry's; the first caller's is kept)."""
    return VersionWatch(_version)


def session_id() -> Optional[str]:
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        ctx = get_script_run_ctx(suppress_warning=True)
        return ctx.session_id if ctx is not None else None
    except Exception:  # noqa: BLE001
        return None


def waker() -> Optional[Callable[[], None]]:
    """A callable that reruns this session's page from any thread (a no-op once it is gone), or None."""
    sid = session_id()
    try:
        from streamlit.runtime import Runtime
        manager = Runtime.instance()._session_mgr  # noqa: SLF001
        if sid is None or manager.get_active_session_info(sid) is None:
            return None
    except Exception:  # noqa: BLE001 (no runtime: AppTest, bare mode)
        return None

    def wake() -> None:
        info = manager.get_active_session_info(sid)  # only a connected tab: a closed one is not rerun
        if info is None:
            return
        session = info.session
        # On the session's event loop, like every browser rerun: called from the watcher's thread, 3 of 50
        # followers once lost a wake (a rerun requested while their fallback fragment's ran)
        session._call_soon_on_event_loop(  # noqa: SLF001
            lambda: session.request_rerun(replay_state(session._client_state)))  # noqa: SLF001 (its last run's)
    return wake


_TRIGGERS = frozenset({"trigger_value", "string_trigger_value", "json_trigger_value", "chat_input_value"})


def replay_state(last: ClientState) -> ClientState:
    """The session's last client state for a rerun of the whole page: its widgets' values, query and page, no
    trigger (a button pressed in that run is not pressed again) and no fragment (the poll may have run last)."""
    state = ClientState()
    state.CopyFrom(last)
    state.fragment_id = ""
    state.is_auto_rerun = False
    kept = [w for w in state.widget_states.widgets if w.WhichOneof("value") not in _TRIGGERS]
    del state.widget_states.widgets[:]
    state.widget_states.widgets.extend(kept)
    return state


def watch(code: str, version: int, read: Callable[[str], Optional[int]]) -> bool:
    """Have the watcher rerun this page when ``code`` moves past ``version``; False where it cannot."""
    wake, sid = waker(), session_id()
    if wake is None or sid is None:
        return False
    watcher(read).watch(sid, code, version, wake)
    return True
