"""A subscriber to vLLM's KV-event PUB socket: drains what arrived, never blocks, keeps counts (and, when asked,
the raw messages, for a fixture).

vLLM binds its PUB socket (``"endpoint": "tcp://*:5557"``, the default); the subscriber connects to it
(``tcp://HOST:5557``). A message over MAX_BATCH_BYTES is dropped by ZMQ itself (``MAXMSGSIZE``), and at most
RECEIVE_HWM messages wait in the socket's queue between drains (more are dropped, and the sequence gap says so).
"""

from __future__ import annotations

import re
import weakref

import zmq

from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.live.kv_events import MAX_BATCH_BYTES, KVEventCounts

RECEIVE_HWM = 100_000
MAX_DRAIN = 10_000  # messages one drain takes (the rest wait for the next)
MAX_RECORDED = 5_000  # raw messages kept for a fixture
_ENDPOINT = re.compile(r"^(tcp://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}|ipc://[\w./-]{1,200})$")


def check_endpoint(endpoint: str) -> str:
    """``tcp://HOST:PORT`` or ``ipc://PATH`` (where vLLM publishes); BridgeInputError for anything else. A ``*`` is
    vLLM's bind address, not one to connect to: the host is named."""
    endpoint = endpoint.strip()
    if not _ENDPOINT.match(endpoint):
        raise BridgeInputError(
            f"{endpoint[:120]!r} is not a KV-event endpoint: give it like tcp://127.0.0.1:5557 (vLLM's "
            "--kv-events-config endpoint, with the server's host for its '*')"
        )
    if endpoint.startswith("tcp://") and not 0 < int(endpoint.rsplit(":", 1)[1]) < 65536:
        raise BridgeInputError(f"{endpoint[:120]!r}: the port must be 1-65535")
    return endpoint


class KVEventSubscriber:
    """Connects on construction (ZMQ connects lazily: a server not yet up is no error); ``drain()`` takes what
    waits; ``close()`` lets the socket go. Owned by one thread."""

    def __init__(self, endpoint: str, topic: bytes = b"", record: bool = False) -> None:
        self.endpoint = check_endpoint(endpoint)
        self.counts = KVEventCounts()
        self.recorded: list[list[bytes]] | None = [] if record else None  # raw messages, for a fixture
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.MAXMSGSIZE, MAX_BATCH_BYTES + 64)
        self._socket.setsockopt(zmq.RCVHWM, RECEIVE_HWM)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SUBSCRIBE, topic)
        # A subscriber dropped unclosed (a page session that ended while attached) must not leave its socket to
        # the garbage collector: collected in a cycle after its context, the context's term() waits for it
        # forever (a test run hung at exit). The finalizer holds both and closes them in order.
        self._closer = weakref.finalize(self, _close, self._socket, self._context)
        try:
            self._socket.connect(self.endpoint)
        except zmq.ZMQError as exc:
            self.close()
            raise BridgeInputError(f"cannot subscribe to {self.endpoint}: {exc}") from None

    def drain(self, wait_s: float = 0.0) -> int:
        """Take every message waiting (up to MAX_DRAIN), waiting up to ``wait_s`` for the first; how many came."""
        taken = 0
        if wait_s > 0 and not self._socket.poll(int(wait_s * 1000)):
            return 0
        while taken < MAX_DRAIN:
            try:
                frames = self._socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            taken += 1
            self.counts.add_message(frames)
            if self.recorded is not None and len(self.recorded) < MAX_RECORDED:
                self.recorded.append(frames)
        return taken

    def close(self) -> None:
        self._closer()


def _close(socket: zmq.Socket, context: zmq.Context) -> None:
    socket.close(linger=0)
    context.term()
