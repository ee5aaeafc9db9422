"""Engine seats: a process-wide cap on how many sessions hold an engine and how much memory their
engines may come to hold, claimed before any pool is allocated, and given back when a tab closes."""

from __future__ import annotations

import ctypes
import gc
import threading
import time
import weakref
from dataclasses import dataclass, field

import streamlit as st

from pykv.border.config import EngineConfig
from pykv.border.units import fmt_bytes
from pykv.engine.model.loader import LoadedModel
from pykv.lab.lab import memory_estimate
from pykv.ui.session.engine_budget import app_engine_bytes, session_engine_bytes

# The whole app: sessions holding an engine, and the memory their engines may come to hold (KV pools + a full
# MAX_STEPS history: ~131 MiB for the default config, ~290 MiB at the sidebar's largest pools on the tiny model),
# sized from the machine's memory; one session may hold at most SESSION_ENGINE_BYTES of it (engine_budget.py).
MAX_ENGINE_SESSIONS = 40
APP_ENGINE_BYTES = app_engine_bytes()
SESSION_ENGINE_BYTES = session_engine_bytes(APP_ENGINE_BYTES)
REAP_EVERY_S = 10.0  # at most this often a script run looks for closed sessions (released TTL + ~2x this after)


class ServerFull(ValueError):
    """No engine for a new session: the app-wide cap is reached."""


@dataclass(eq=False)
class Seat:
    """One session's claim on engine memory; freed with the session (its session_state goes)."""

    bytes: int
    session_id: str | None = None
    labs: weakref.WeakSet = field(default_factory=weakref.WeakSet)  # the session's Labs (released when it is gone)
    gone_since: float | None = None


def _trim_heap() -> None:
    """Hand freed heap pages back to the OS (glibc keeps them otherwise: RSS would not return to baseline)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class Seats:
    """Process-wide registry of the seats of live sessions (weak: a dropped session frees its seat).

    Streamlit drops a closed tab's session only lazily (on a later access to its session store, after
    server.disconnectedSessionTTL), so any session's script run (at most every REAP_EVERY_S) releases the Labs
    of a session disconnected for longer than that TTL: their pools and history go then, not whenever
    Streamlit next touches the closed session."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seats: weakref.WeakSet[Seat] = weakref.WeakSet()
        self._last_reap = 0.0  # time.monotonic() of the last reap()

    def claim(self, mine: Seat | None, wanted: int) -> Seat:
        """``mine`` resized to ``wanted`` bytes (a new seat if None); ServerFull if the app is at its cap, or if
        ``wanted`` is more than one session's share."""
        if wanted > SESSION_ENGINE_BYTES:
            raise ServerFull(
                f"This engine would hold {fmt_bytes(wanted)} (KV pools and history); one session may "
                f"hold at most {fmt_bytes(SESSION_ENGINE_BYTES)} on this server: use smaller pools "
                "(num_gpu_blocks, num_cpu_blocks, block_size)."
            )
        with self.lock:
            for attempt in range(2):
                others = [s for s in self.seats if s is not mine]
                used = sum(s.bytes for s in others)
                if len(others) < MAX_ENGINE_SESSIONS and used + wanted <= APP_ENGINE_BYTES:
                    break
                if attempt == 0:
                    gc.collect()  # sessions already gone but still in a reference cycle
            else:
                raise ServerFull(
                    f"The server is at its limit for engines ({len(others)} sessions hold "
                    f"{fmt_bytes(used)} of {fmt_bytes(APP_ENGINE_BYTES)}; at most {MAX_ENGINE_SESSIONS} sessions, "
                    f"this one needs {fmt_bytes(wanted)}). Closed tabs give theirs back within a minute: "
                    "try again shortly, or ask for smaller pools."
                )
            seat = mine or Seat(0)
            seat.bytes = wanted
            self.seats.add(seat)
            return seat

    def release(self, seat: Seat) -> None:
        """Give a live session's seat back (it holds no engine any more, e.g. a learner back from exploring)."""
        with self.lock:
            self.seats.discard(seat)
            seat.bytes = 0

    def in_use(self) -> tuple[int, int]:
        with self.lock:
            live = list(self.seats)
            return len(live), sum(s.bytes for s in live)

    def maybe_reap(self) -> None:
        """``reap()`` at most every REAP_EVERY_S, from a script run of any session. Not from a thread of
        our own: a background thread calling into Streamlit's runtime stalled live sessions' reruns."""
        now = time.monotonic()
        if now - self._last_reap >= REAP_EVERY_S:
            self._last_reap = now
            self.reap()

    def reap(self) -> int:
        """Release the Labs of sessions disconnected for longer than the TTL; returns how many seats went."""
        from streamlit import runtime

        if not runtime.exists():
            return 0
        instance, ttl, now = runtime.get_instance(), float(st.get_option("server.disconnectedSessionTTL")), time.time()
        gone = []
        with self.lock:
            for seat in list(self.seats):
                if seat.session_id is None or instance.is_active_session(seat.session_id):
                    seat.gone_since = None
                elif seat.gone_since is None:
                    seat.gone_since = now
                elif now - seat.gone_since > ttl + REAP_EVERY_S:
                    gone.append(seat)
                    self.seats.discard(seat)
        for seat in gone:
            for lab in list(seat.labs):
                lab.release()
            seat.bytes = 0
        if gone:
            _trim_heap()
        return len(gone)


@st.cache_resource(show_spinner=False)
def seats() -> Seats:
    return Seats()


def claim_seat(config: EngineConfig, loaded: LoadedModel) -> Seat:
    """Reserve this session's engine memory for ``config`` (before allocating it); ServerFull if it cannot."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    registry = seats()
    registry.maybe_reap()
    seat = registry.claim(st.session_state.get("engine_seat"), memory_estimate(config, loaded))
    ctx = get_script_run_ctx()
    seat.session_id = ctx.session_id if ctx is not None else None
    st.session_state.engine_seat = seat
    return seat
