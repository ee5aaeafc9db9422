"""A browser tab without the browser: an asyncio client for Streamlit's websocket protocol (load tests).

Speaks what the frontend (streamlit/static: ``ConnectionManager``, ``App.sendRerunBackMsg``) speaks on
``ws://host:port/_stcore/stream`` (subprotocol "streamlit"): ``BackMsg`` / ``ForwardMsg`` from ``streamlit.proto``.
Like the browser it sends ``rerun_script`` ClientStates (query string; the page name first, then the page hash
of the latest new_session / navigation; the widgets' states; a ContextInfo; its ForwardMsg cache's hashes),
keeps that cache and resolves ``ref_hash`` messages, keeps the query the server writes (``page_info_changed``),
runs the ``auto_rerun`` timers of ``run_every`` fragments (a fragment ``rerun_script`` every interval like
``setInterval``, cleared by a full run's new_session and by ``stop_auto_rerun``) and a class page's long poll
(st_follow.py), answers websocket pings (the
websockets package does) and, if asked, sends ``app_heartbeat``s.

    c = StClient("http://127.0.0.1:8501", name="learner-1")
    await c.open("lesson=kv-cache-and-blocks&step=1", page_name="lessons")
    t0 = time.monotonic(); await c.click("lesson_next")
    node = await c.wait_text(r"step 2 of \\d+", since=t0)   # node.t - t0: time until it appeared
    c.query_string, c.params["step"], c.page.texts(); await c.close()

Every method that waits takes ``timeout_s`` (default: the client's) and raises TimeoutError.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Callable
from urllib.parse import parse_qs

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ContextInfo
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Origin, Subprotocol

from bench.st_follow import COMPONENT, FollowPoll
from bench.st_page import MessageCache, Node, Page
from bench.st_timers import FragmentTimers


@dataclass
class Run:
    """One script run of the session, as the wire shows it (times: time.monotonic())."""

    run_id: str
    fragment_ids: list[str]
    t_start: float  # its new_session arrived
    t_end: float | None = None  # its script_finished arrived
    status: str = ""  # ForwardMsg.ScriptFinishedStatus name


class StClient:
    """One Streamlit session over a websocket (see the module docstring)."""

    def __init__(
        self, base_url: str, name: str = "client", timeout_s: float = 120.0, heartbeat_s: float | None = None
    ) -> None:
        self.base_url, self.name, self.timeout_s, self.heartbeat_s = base_url.rstrip("/"), name, timeout_s, heartbeat_s
        self.page = Page()
        self.query_string = ""  # the address bar's query (without "?"): what we asked for, then what the app wrote
        self.page_name = ""
        self.page_script_hash = ""  # of the latest new_session / navigation: later reruns stay on that page
        self.pages: dict[str, str] = {}  # url_pathname -> page_script_hash (from new_session / navigation)
        self.session_id = ""
        self.runs: dict[str, Run] = {}
        self.current_run: Run | None = None
        self.errors: list[str] = []  # protocol-level problems (closed socket, compile error, page not found...)
        self.msg_counts: Counter[str] = Counter()  # ForwardMsg type -> count
        self.msg_bytes: Counter[str] = Counter()
        self.log: deque[tuple[float, str, int]] = deque(maxlen=5000)  # (time.monotonic(), ForwardMsg type, bytes)
        self.sent: Counter[str] = Counter()  # "rerun", "auto_rerun", "heartbeat"
        self.heartbeat_acks = 0
        self.values: dict[str, WidgetState] = {}  # widget id -> the value this "user" set (sent on every rerun)
        self._cache = MessageCache()
        self._max_age = 2
        self._navigation = False
        self._ws = None
        self._tasks: list[asyncio.Task] = []
        self._timers = FragmentTimers(lambda fid: self.rerun(fragment_id=fid, is_auto_rerun=True, wait=False), name)
        self.follow = FollowPoll(  # a class page's long poll
            self.base_url, lambda fid, trigger: self.rerun(fragment_id=fid, states=[trigger], wait=False), name
        )
        self._changed = asyncio.Event()
        self.closed = False

    # ---- connection ------------------------------------------------------------------------

    async def connect(self) -> None:
        ws_url = "ws" + self.base_url[4:] + "/_stcore/stream"
        self._ws = await connect(
            ws_url,
            subprotocols=[Subprotocol("streamlit")],
            origin=Origin(self.base_url),
            max_size=None,
            open_timeout=self.timeout_s,
            ping_interval=20,
            ping_timeout=60,
        )
        self._tasks.append(asyncio.create_task(self._receive(), name=f"{self.name}-recv"))
        if self.heartbeat_s:
            self._tasks.append(asyncio.create_task(self._heartbeats(), name=f"{self.name}-heartbeat"))

    async def close(self) -> None:
        """Stop the timers and close the websocket (the server keeps the session for its disconnect TTL)."""
        self.closed = True
        self._timers.stop_all()
        self.follow.stop()
        if self._ws is not None:
            await self._ws.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _send(self, msg: BackMsg) -> None:
        await self._ws.send(msg.SerializeToString())

    async def _heartbeats(self) -> None:
        while not self.closed:
            await asyncio.sleep(self.heartbeat_s)
            self.sent["heartbeat"] += 1
            await self._send(BackMsg(app_heartbeat=True))

    # ---- what a user does ------------------------------------------------------------------

    async def open(self, query_string: str = "", page_name: str = "", timeout_s: float | None = None) -> Run:
        """Connect (if needed) and load ``page_name`` with ``query_string``. The page name is the URL path
        ("lessons"); the default page of an st.navigation app is "" (the browser shows it at "/")."""
        if self._ws is None:
            await self.connect()
        self.query_string, self.page_name, self.page_script_hash = query_string.lstrip("?"), page_name, ""
        return await self.rerun(timeout_s=timeout_s)

    async def click(self, key: str, timeout_s: float | None = None) -> Run:
        """Press the button with user key ``key`` and wait for the run it starts to finish."""
        node = self.page.widget(key)
        if node is None or node.kind not in ("button", "download_button"):
            raise LookupError(
                f"{self.name}: no button with key {key!r} on the page (buttons: {sorted(self.page.widgets())})"
            )
        if node.disabled:
            raise ValueError(f"{self.name}: button {key!r} is disabled")
        return await self.rerun(fragment_id=node.fragment_id, triggers=[node.widget_id], timeout_s=timeout_s)

    def set_value(self, key: str, **value) -> None:
        """Give the widget with user key ``key`` a value, sent from the next rerun on
        (e.g. ``bool_value=True``, ``int_value=3``: a WidgetState field)."""
        node = self.page.widget(key)
        if node is None:
            raise LookupError(f"{self.name}: no widget with key {key!r} on the page")
        self.values[node.widget_id] = WidgetState(id=node.widget_id, **value)

    async def set_query(self, query_string: str, timeout_s: float | None = None) -> Run:
        """A rerun of the same page with a new query string (what a link or a navigation does)."""
        return await self.rerun(query_string=query_string.lstrip("?"), timeout_s=timeout_s)

    async def goto(self, page_name: str, query_string: str = "", timeout_s: float | None = None) -> Run:
        """Another page of the app (by url path: "lessons", "" for the default page, ...)."""
        page_hash = self.pages.get(page_name, "")
        return await self.rerun(
            query_string=query_string.lstrip("?"),
            page_script_hash=page_hash,
            page_name="" if page_hash else page_name,
            timeout_s=timeout_s,
        )

    async def rerun(
        self,
        *,
        fragment_id: str = "",
        triggers: tuple[str, ...] | list[str] = (),
        states: tuple[WidgetState, ...] | list[WidgetState] = (),
        query_string: str | None = None,
        page_script_hash: str | None = None,
        page_name: str = "",
        is_auto_rerun: bool = False,
        wait: bool = True,
        timeout_s: float | None = None,
    ) -> Run | None:
        """Send a rerun_script as the browser does; with ``wait``, return once a run started by it finished."""
        if query_string is not None:
            self.query_string = query_string
        if page_script_hash is not None:
            self.page_script_hash, self.page_name = page_script_hash, page_name
        name = self.page_name if not self.page_script_hash else ""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string, state.page_script_hash, state.page_name = self.query_string, self.page_script_hash, name
        state.fragment_id, state.is_auto_rerun = fragment_id, is_auto_rerun
        on_page = self.page.widget_ids()
        state.widget_states.widgets.extend(v for wid, v in self.values.items() if wid in on_page)
        state.widget_states.widgets.extend(WidgetState(id=wid, trigger_value=True) for wid in triggers)
        state.widget_states.widgets.extend(states)
        state.cached_message_hashes.extend(self._cache.entries)
        url = f"{self.base_url}/{name}?{self.query_string}"
        state.context_info.CopyFrom(
            ContextInfo(
                timezone="UTC", timezone_offset=0, locale="en-US", url=url, is_embedded=False, color_scheme="light"
            )
        )
        t_sent = time.monotonic()
        self.sent["auto_rerun" if is_auto_rerun else "rerun"] += 1
        await self._send(msg)
        if not wait:
            return None

        def finished() -> Run | None:
            for run in self.runs.values():
                if (
                    run.t_end is not None
                    and run.t_start >= t_sent
                    and run.status != "FINISHED_EARLY_FOR_RERUN"
                    and (not run.fragment_ids or not fragment_id or fragment_id in run.fragment_ids)
                ):
                    return run
            return None

        return await self.wait_for(finished, timeout_s, f"the run after a rerun sent at {t_sent:.3f}")

    # ---- waiting ---------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], object], timeout_s: float | None = None, what: str = "") -> object:
        """Wait until ``predicate()`` is truthy (checked after every message); return its value."""
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else self.timeout_s)
        while True:
            value = predicate()
            if value:
                return value
            if self.closed:
                raise ConnectionError(f"{self.name}: connection closed while waiting for {what}")
            left = deadline - time.monotonic()
            if left <= 0:
                shown = re.sub(r"(^|&)key=[^&]*", r"\1key=…", self.query_string)  # never print a class key
                raise TimeoutError(f"{self.name}: no {what} (query {shown!r})")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def wait_text(
        self, pattern: str | re.Pattern, since: float | None = None, timeout_s: float | None = None
    ) -> Node:
        """The first element whose text matches ``pattern`` and that arrived at or after ``since`` (any
        time if None); its ``.t`` is when its message arrived."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        return await self.wait_for(lambda: self.page.find(rx, since), timeout_s, f"text /{rx.pattern}/")

    @property
    def params(self) -> dict[str, str]:
        """The current query string as a dict (last value wins)."""
        return {k: v[-1] for k, v in parse_qs(self.query_string, keep_blank_values=True).items()}

    # ---- receiving -------------------------------------------------------------------------

    async def _receive(self) -> None:
        try:
            async for raw in self._ws:
                self._handle(ForwardMsg.FromString(raw), len(raw), time.monotonic())
                self._changed.set()
        except ConnectionClosed as e:
            if not self.closed:
                self.errors.append(f"websocket closed: {e}")
        except Exception as e:  # a bug here must not hang the waiters
            self.errors.append(f"receive loop: {type(e).__name__}: {e}")
        finally:
            self.closed = True
            self._changed.set()

    def _handle(self, msg: ForwardMsg, nbytes: int, t: float) -> None:
        kind = msg.WhichOneof("type") or "none"
        self.log.append((t, kind, nbytes))
        self.msg_counts[kind] += 1
        self.msg_bytes[kind] += nbytes
        if kind == "ref_hash":
            try:
                cached = self._cache.resolve(msg.ref_hash)
            except KeyError:
                self.errors.append(f"ForwardMsg cache miss {msg.ref_hash}")
                return
            self._delta(cached.delta, msg.metadata, t, nbytes, via_ref=True)
        elif kind == "delta":
            self._cache.keep(msg)
            self._delta(msg.delta, msg.metadata, t, nbytes)
        elif kind == "new_session":
            self._new_session(msg, t)
        elif kind == "script_finished":
            self._script_finished(msg, t)
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "navigation":  # st.navigation: new_session named the main script, this names the page
            self.pages, self._navigation = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}, True
            self.page_script_hash = msg.navigation.page_script_hash or self.page_script_hash
        elif kind == "auto_rerun":
            self._timers.arm(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            for fid in msg.stop_auto_rerun.fragment_ids:
                self._timers.stop(fid)
        elif kind == "heartbeat_ack":
            self.heartbeat_acks += 1
        elif kind == "page_not_found":
            self.errors.append(f"page not found: {msg.page_not_found.page_name!r}")
        elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
            self.errors.append(f"script compilation error: {msg.session_event.script_compilation_exception.message}")

    def _delta(self, delta, metadata, t: float, nbytes: int, via_ref: bool = False) -> None:
        run_id = self.current_run.run_id if self.current_run else ""
        self.page.apply(delta, tuple(metadata.delta_path), run_id, t, nbytes, via_ref)
        if (
            delta.WhichOneof("type") == "new_element"
            and delta.new_element.WhichOneof("type") == "bidi_component"
            and delta.new_element.bidi_component.component_name == COMPONENT
        ):
            self.follow.mounted(
                delta.new_element.bidi_component.id, delta.new_element.bidi_component.json, delta.fragment_id
            )

    def _new_session(self, msg: ForwardMsg, t: float) -> None:
        ns = msg.new_session
        run = Run(msg.metadata.run.script_run_id, list(msg.metadata.run.fragment_ids), t)
        self.runs[run.run_id] = self.current_run = run
        if ns.HasField("initialize"):
            self.session_id = ns.initialize.session_id or self.session_id
        if ns.page_script_hash:
            self.page_script_hash = ns.page_script_hash
        if not self._navigation:  # an st.navigation app lists its pages in its navigation message instead
            self.pages.update({p.url_pathname: p.page_script_hash for p in ns.app_pages})
        if not run.fragment_ids:  # a full run: the frontend clears its auto-rerun timers (the run re-arms them)
            self._max_age = ns.config.max_cached_message_age or self._max_age
            self._timers.stop_all()

    def _script_finished(self, msg: ForwardMsg, t: float) -> None:
        run_id = msg.metadata.run.script_run_id if msg.metadata.HasField("run") else ""
        status = ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
        run = self.runs.get(run_id) or self.current_run
        if run is None:
            return
        run.t_end, run.status = t, status
        if msg.script_finished in (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY):
            if run.fragment_ids or run is self.current_run:
                self.page.clear_stale(run.run_id, run.fragment_ids)
        if msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            self._cache.finished_run(self._max_age, run.fragment_ids)
        if len(self.runs) > 200:  # keep the recent ones only
            for old in list(self.runs)[:100]:
                del self.runs[old]

    @property
    def auto_reruns(self) -> dict[str, float]:
        """Fragment id -> interval of the run_every timers now running."""
        return self._timers.intervals()
