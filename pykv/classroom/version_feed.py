"""VersionFeed: this replica's copy of every class's version, kept current by Redis pub/sub, so that
``RedisStore.version()`` (the long polls, ten times a second per class) is a dict read instead of a round trip.

Rule: a cached version is served only while it can be trusted:

- the subscriber is live (subscribed, not between connections) and the entry was made during the
  current subscription (``epoch``): messages lost while disconnected cannot leave a stale entry;
- the entry is younger than ``trust_s``: a class that expired by TTL (no message is published for
  that) is seen gone within ``trust_s``;
- otherwise the caller reads Redis and offers the result with ``remember``, which keeps it only if
  no message about that code arrived since the caller's ``mark()`` (the message is newer).

A message ("CODE VERSION" or "CODE end") is only a hint, since anyone who reaches Redis can publish
one: for a code this replica holds in its cache, the subscriber re-reads the class's real version with
``read`` and caches that; a message about a code it does not hold is ignored, and its number is never
used (a forged "K7QM2X 999999999" once kept every follower rerunning). This replica's own writes go
through ``note``: a version only moves up there, an end (None) replaces it.

The subscriber is a daemon thread started by the first ``start()``; it reconnects with backoff after
any error and clears the cache on every (re)subscription; ``close()`` stops it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

import redis

MAX_ENTRIES = 10_000  # codes cached at once (asked-for codes that do not exist are cached too)


@dataclass(frozen=True)
class _Entry:
    version: int | None  # None: the class is gone
    at: float  # monotonic seconds when cached
    epoch: int  # the subscription it was cached during
    seq: int  # the message counter when it was cached (remember: the caller's mark)


@dataclass(frozen=True)
class Mark:
    """Where the feed stood when a caller started a read of Redis (see ``remember``)."""

    epoch: int
    seq: int


class VersionFeed:
    def __init__(
        self,
        connect: Callable[[], redis.Redis],
        channel: str,
        trust_s: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
        read: Callable[[str], int | None] | None = None,
    ):
        self._connect = connect
        self._read = read  # code -> its real version (None: gone); without it a notice just forgets the code
        self._channel = channel
        self._trust_s = trust_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._cache: dict[str, _Entry] = {}  # changed under _lock by note/remember/the thread
        self._live = False  # subscribed now; set by the thread
        self._epoch = 0  # +1 on every (re)subscription; set by the thread
        self._seq = 0  # +1 on every note
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def live(self) -> bool:
        return self._live

    @property
    def epoch(self) -> int:
        """How many times the subscriber has (re)subscribed."""
        return self._epoch

    def start(self) -> None:
        """Start the subscriber thread if it is not running (idempotent; cheap when running)."""
        if self._thread is not None and self._thread.is_alive() or self._stop.is_set():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="pykv-class-feed", daemon=True)
                self._thread.start()

    def close(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        with self._lock:
            self._live = False
            self._cache.clear()

    # ---- the cache -----------------------------------------------------------------------------------
    def cached(self, code: str) -> _Entry | None:
        """The trusted entry for ``code``, or None (then read Redis)."""
        entry = self._cache.get(code)
        if (
            entry is None
            or not self._live
            or entry.epoch != self._epoch
            or self._monotonic() - entry.at >= self._trust_s
        ):
            return None
        return entry

    def holds(self, code: str) -> bool:
        """Whether anything is cached for ``code`` (trusted or not)."""
        return code in self._cache

    def mark(self) -> Mark:
        with self._lock:
            return Mark(self._epoch, self._seq)

    def remember(self, code: str, version: int | None, mark: Mark) -> None:
        """Cache what Redis answered after ``mark``, unless a message about ``code`` came since."""
        with self._lock:
            if not self._live or mark.epoch != self._epoch:
                return
            entry = self._cache.get(code)
            if entry is not None and entry.epoch == self._epoch and entry.seq > mark.seq:
                return
            self._put(code, _Entry(version, self._monotonic(), self._epoch, mark.seq))

    def note(self, code: str, version: int | None) -> None:
        """A change (new version) or an end (None) of ``code``, from a message or from this replica."""
        with self._lock:
            self._seq += 1
            entry = self._cache.get(code)
            if version is not None and entry is not None and entry.epoch == self._epoch and entry.version is not None:
                version = max(version, entry.version)
            self._put(code, _Entry(version, self._monotonic(), self._epoch, self._seq))

    def _put(self, code: str, entry: _Entry) -> None:
        if len(self._cache) >= MAX_ENTRIES and code not in self._cache:
            self._cache.clear()
        self._cache[code] = entry

    def check_invariants(self) -> None:
        with self._lock:
            assert len(self._cache) <= MAX_ENTRIES, len(self._cache)
            assert all(e.epoch <= self._epoch and e.seq <= self._seq for e in self._cache.values())
            assert not self._live or self._epoch >= 1

    # ---- the subscriber thread -----------------------------------------------------------------------
    def _run(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            pubsub = None
            try:
                pubsub = self._connect().pubsub()
                pubsub.subscribe(self._channel)
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.25)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._went_live()
                        backoff = 0.1
                    elif message["type"] == "message":
                        self._on_message(message["data"])
            except (redis.RedisError, OSError, ValueError):
                pass  # the server went away or the connection broke: reconnect below
            finally:
                self._went_dark()
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except (redis.RedisError, OSError):
                        pass
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)

    def _went_live(self) -> None:
        with self._lock:
            self._epoch += 1
            self._cache.clear()
            self._live = True

    def _went_dark(self) -> None:
        with self._lock:
            self._live = False
            self._cache.clear()

    def _on_message(self, data: object) -> None:
        """A hint that ``code`` changed: re-read it if this replica holds it (never trust the number)."""
        parts = data.split(" ") if isinstance(data, str) else []
        if len(parts) != 2 or not self.holds(parts[0]):
            return
        code = parts[0]
        with self._lock:
            self._seq += 1  # a read that started before this notice must not be remembered over it
            mark = Mark(self._epoch, self._seq)
            entry = self._cache.get(code)
            if entry is not None:  # served until the re-read lands (a few ms): polls meanwhile cost nothing
                self._cache[code] = _Entry(entry.version, entry.at, entry.epoch, mark.seq)
        if self._read is None:
            return
        try:
            version = self._read(code)
        except Exception:  # unreachable or garbage: forgotten; the next poll reads the store
            return
        self.remember(code, version, mark)
