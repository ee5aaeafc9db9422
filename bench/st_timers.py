"""The browser's ``run_every`` timers for one Streamlit session (used by st_client.py).

The frontend (``App.handleAutoRerun``) arms one ``setInterval`` per fragment id when an ``auto_rerun``
ForwardMsg arrives (a second message with the same interval changes nothing), clears them all at a full run's
new_session (the run re-arms the fragments it still draws) and the listed ones at ``stop_auto_rerun``. Each
tick sends the fragment's ``rerun_script`` whether or not the previous one has finished; like setInterval, ticks
missed while the event loop was busy are dropped, not caught up.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable


class FragmentTimers:
    """Fragment id -> a running timer that calls ``tick(fragment_id)`` every interval."""

    def __init__(self, tick: Callable[[str], Awaitable[object]], name: str = "") -> None:
        self._tick, self._name = tick, name
        self._timers: dict[str, tuple[float, asyncio.Task]] = {}

    def arm(self, fragment_id: str, interval: float) -> None:
        if not fragment_id or self.intervals().get(fragment_id) == interval:
            return
        self.stop(fragment_id)
        task = asyncio.create_task(self._run(fragment_id, interval), name=f"{self._name}-auto-{fragment_id}")
        self._timers[fragment_id] = (interval, task)

    def stop(self, fragment_id: str) -> None:
        entry = self._timers.pop(fragment_id, None)
        if entry is not None:
            entry[1].cancel()

    def stop_all(self) -> None:
        for fragment_id in list(self._timers):
            self.stop(fragment_id)

    def intervals(self) -> dict[str, float]:
        return {fid: interval for fid, (interval, _) in self._timers.items()}

    async def _run(self, fragment_id: str, interval: float) -> None:
        start = time.monotonic()
        while True:
            ticks = int((time.monotonic() - start) / interval) + 1
            await asyncio.sleep(max(0.0, start + ticks * interval - time.monotonic()))
            try:
                await self._tick(fragment_id)
            except Exception:  # the socket closed: the client notes it; the timer ends
                return
