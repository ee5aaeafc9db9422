"""The browser side of a class page's long poll (pykv/ui/session/follow_push.py), for st_client.py.

The ``pykv_class_follow`` component's JavaScript, spoken in asyncio: each time the element arrives (every run
gives it new data) the previous poll is dropped and a new one started: ``GET {path}?ticket=…`` on the
app's own route, asked again while it answers "not moved", and on "moved" (or three errors, 503 and 404 among them,
in a row) the rerun the component's trigger sends: of the fragment the component is in (the class page's step),
with the trigger's value among the widget states.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Awaitable, Callable
from urllib.parse import quote, urlsplit

from streamlit.proto.WidgetStates_pb2 import WidgetState

COMPONENT = "pykv_class_follow"
TRIGGER_PREFIX = "$$STREAMLIT_INTERNAL_KEY_"  # + the element's id + "__events": the trigger widget it reports to


async def http_get(base_url: str, path: str, timeout_s: float) -> tuple[int, dict | None]:
    """A GET of ``path`` on ``base_url`` (HTTP/1.1, one connection each): its status and JSON body."""
    where = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(where.hostname, where.port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {where.netloc}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout_s)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body) if status == 200 else None


class FollowPoll:
    """One page's poll: ``mounted(data)`` when the component's element arrives; ``rerun()`` when it fires."""

    def __init__(self, base_url: str, rerun: Callable[[str, WidgetState], Awaitable[object]], name: str = "") -> None:
        self._base_url, self._rerun, self._name = base_url, rerun, name
        self._task: asyncio.Task | None = None
        self.polls = 0  # requests sent
        self.fired = 0  # reruns it caused

    def mounted(self, element_id: str, data_json: str, fragment_id: str) -> None:
        self.stop()
        data = json.loads(data_json)
        trigger = WidgetState(
            id=f"{TRIGGER_PREFIX}{element_id}__events",
            json_trigger_value=json.dumps([{"event": "moved", "value": data["run"]}]),
        )
        path = f"{data['path']}?ticket={quote(data['ticket'])}"
        self._task = asyncio.create_task(self._loop(path, fragment_id, trigger), name=f"{self._name}-follow")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _loop(self, path: str, fragment_id: str, trigger: WidgetState) -> None:
        failures = 0
        while True:
            self.polls += 1
            try:
                status, body = await http_get(self._base_url, path, timeout_s=60)
                if status != 200 or body is None:
                    raise ConnectionError(f"HTTP {status}")
                failures = 0
                if body.get("moved"):
                    break
            except (OSError, ConnectionError, ValueError, asyncio.TimeoutError):
                failures += 1
                if failures >= 3:
                    break
                await asyncio.sleep(failures + random.random())
        self.fired += 1
        await self._rerun(fragment_id, trigger)
