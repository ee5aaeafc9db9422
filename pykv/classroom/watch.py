"""VersionWatch: one process-wide watcher that wakes a follower only when its class's version moved.

Instead of every follower's page rerunning a fragment once a second to ask the store "did the class move?",
each page registers a waiter (``watch(key, code, version, wake)``) and one daemon thread reads each watched
class's version every ``every_s`` (one read per class, however many followers), and calls the ``wake`` of
every waiter whose version is no longer current, once; a woken page reruns and registers again. An idle
follower then costs the server nothing but its entry here.

- One waiter per ``key`` (the app: the browser session): registering again replaces it.
- A version read that fails wakes nobody (the page's slow fallback poll says what is wrong), so a broken
  store cannot make the room rerun in a loop; a gone class (None) is a move: its followers wake and say so.
- Wakes are paced ``gap_s`` apart: a rerun costs ~10 ms of one core (the GIL), so a room woken at once
  only thrashes; paced, each rerun runs nearly alone and the first ones land sooner.
- A ``wake`` that raises is dropped (the session went away); at most ``max_waiters`` are held (the oldest
  registration goes first).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Optional

from pykv.classroom.limits import MAX_CLASSES, MAX_LEARNERS

WATCH_S = 0.2  # how often the watcher reads the watched classes' versions (propagation ≈ this + one rerun)
WAKE_GAP_S = 0.006  # between two wakes: a room's reruns queue one behind another instead of 100 threads at once
#                     (all woken together, 100 followers' reruns cost 4x the CPU each and took p95 7.5 s)


@dataclass(frozen=True)
class _Waiter:
    code: str
    version: int
    wake: Callable[[], object]


class VersionWatch:
    def __init__(self, version: Callable[[str], Optional[int]], every_s: float = WATCH_S,
                 max_waiters: int = 2 * MAX_CLASSES * MAX_LEARNERS, gap_s: float = WAKE_GAP_S,
                 sleep: Callable[[float], object] = time.sleep):
        self._version = version
        self._gap_s, self._sleep = gap_s, sleep
        self._every_s = every_s
        self._max = max_waiters
        self._lock = threading.Lock()
        self._waiters: OrderedDict[str, _Waiter] = OrderedDict()  # key -> waiter; under _lock
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.wakes = 0  # waiters woken so far (tests, benches)
        self.reads = 0  # version reads so far

    def watch(self, key: str, code: str, version: int, wake: Callable[[], object]) -> None:
        """Wake ``wake()`` once when ``code``'s version is no longer ``version``; replaces ``key``'s waiter."""
        with self._lock:
            self._waiters.pop(key, None)
            while len(self._waiters) >= self._max:
                self._waiters.popitem(last=False)
            self._waiters[key] = _Waiter(code, version, wake)
        self.start()

    def forget(self, key: str) -> None:
        with self._lock:
            self._waiters.pop(key, None)

    def __len__(self) -> int:
        return len(self._waiters)

    def tick(self) -> int:
        """One pass: read each watched class once, wake the waiters it left behind; how many were woken."""
        with self._lock:
            codes = {w.code for w in self._waiters.values()}
        current: dict[str, Optional[int]] = {}
        for code in codes:
            try:
                current[code] = self._version(code)
            except Exception:  # noqa: BLE001 (unreachable store: nobody wakes; the fallback poll reports it)
                continue
            self.reads += 1
        with self._lock:
            due = [(key, w) for key, w in self._waiters.items() if w.code in current and current[w.code] != w.version]
            for key, _ in due:
                del self._waiters[key]
        for i, (_, waiter) in enumerate(due):
            if i and self._gap_s > 0:
                self._sleep(self._gap_s)
            try:
                waiter.wake()
            except Exception:  # noqa: BLE001 (a session that went away)
                pass
        self.wakes += len(due)
        return len(due)

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive() or self._stop.is_set():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="pykv-class-watch", daemon=True)
                self._thread.start()

    def close(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 (never let the watcher die)
                pass
