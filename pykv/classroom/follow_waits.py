"""FollowWaits: a class's followers wait here for the instructor's next move instead of asking every second.

A follower's page holds one long poll (``wait``) on the server's event loop, which costs nothing while the class
stands still; it is answered as soon as the class's version moves (the page then reruns once), and "not moved"
after ``timeout_s`` (the page asks again, which also renews the learner's presence).

    page run ──issue(code, version, page, mode)──> ticket  (a (class, page) this replica drew, the version shown)
    browser  ──wait(ticket)────────────────> ... held ...   one reader task: every every_s, the versions of the
             <──────────── MOVED ───────────               classes someone waits on, in one worker thread; a
                                                           moved class's pages answered a wave at a time

Rules:

- A long poll names only a ticket, never a learner nor a version: a request cannot make up learners to fill a
  class, nor a stale version to be answered at once, since only a page run of this replica issues tickets (at
  most ``max_tickets``; one unused for ``ticket_ttl_s`` may be forgotten, and its page, told UNKNOWN a few times,
  reruns and gets a new one).
- One reader task per event loop reads the versions (a dict read on one process; the Redis feed's cache on
  several replicas) off the loop, so a slow store never stalls the server; a read that fails answers MOVED:
  the page reruns and says what is wrong.
- A moved class's pages are answered ``wave`` at a time as the earlier ones come back (``_release``).
- One held poll a ticket (a newer one answers the older SAME) and at most ``max_waiters`` in all (the rest are
  answered BUSY and retry later).
"""

from __future__ import annotations

import asyncio
import enum
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Callable

MARK_EVERY_S = 4.0  # a poll marks its learner present at most this often (HEARTBEAT_S: the store batches it too)
WAIT_S = 10.0  # a held poll is answered "not moved" after this long (PRESENCE_S is 15: presence stays fresh)
READ_EVERY_S = 0.1  # how often the versions of the classes someone waits on are read
TICKET_TTL_S = 60.0
MAX_TICKETS = 20_000  # MAX_CLASSES x MAX_LEARNERS x 2 (a learner's ticket before and after a reload)
MAX_WAITERS = 10_000
WAVE, WAVE_GAP_S = 10, 0.25  # a moved class's pages are answered this many at a time, at most this far apart;
BACK_SHARE, BACK_CHECK_S = 0.5, 0.005  # the next wave once this share is back (see _release)


class Answer(enum.Enum):
    MOVED = "moved"  # the class is no longer at the version the page shows: rerun
    SAME = "same"  # not moved within timeout_s: ask again
    BUSY = "busy"  # too many polls held: ask again in a few seconds
    UNKNOWN = "unknown"  # no such ticket here


@dataclass(frozen=True)
class Ticket:
    code: str
    page: str  # the browser session's anonymous id (a learner's id in the class when ``mode`` is set)
    mode: str | None  # the presence a poll renews ("following"), None for none (a projector, a speaker view)


class FollowWaits:
    def __init__(
        self,
        read_version: Callable[[str], int | None],
        mark_seen: Callable[[str, str, str], None] = lambda code, learner, mode: None,
        *,
        mark_every_s: float = MARK_EVERY_S,
        timeout_s: float = WAIT_S,
        every_s: float = READ_EVERY_S,
        ticket_ttl_s: float = TICKET_TTL_S,
        max_tickets: int = MAX_TICKETS,
        max_waiters: int = MAX_WAITERS,
        wave: int = WAVE,
        wave_gap_s: float = WAVE_GAP_S,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self._read = read_version  # code -> its version (None: gone); called in a worker thread
        self._mark_seen = mark_seen  # (code, learner, mode): presence, in a worker thread, at most every mark_every_s
        self._mark_every_s = mark_every_s
        self.timeout_s, self.every_s = timeout_s, every_s
        self._ticket_ttl_s, self._max_tickets, self._max_waiters = ticket_ttl_s, max_tickets, max_waiters
        self._monotonic = monotonic
        self.wave, self.wave_gap_s = wave, wave_gap_s
        self._lock = threading.Lock()  # guards the tickets: page runs issue them from script threads
        self._tickets: dict[str, tuple[Ticket, float, int | None]] = {}  # token -> (ticket, last used, version
        #                                                                     its page shows); changed under _lock
        self._marked: dict[str, float] = {}  # token -> when its presence was last marked (event loop only)
        self._tokens: dict[Ticket, str] = {}  # the reverse: a page rerun keeps its token
        # Waiters live on the event loop's thread only: code -> [(version the page shows, future)]
        self._waiters: dict[str, list[tuple[int | None, asyncio.Future[Answer]]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._releasing: dict[str, asyncio.Task[None]] = {}  # code -> the task answering its pages (event loop)
        self._held = 0  # polls held now (event loop)
        self._by_token: dict[str, asyncio.Future[Answer]] = {}  # token -> its one held poll (event loop)

    # ---- tickets (page runs, any thread) -------------------------------------------------------------
    def issue(self, code: str, version: int | None, page: str, mode: str | None = None) -> str:
        """The token a page's long poll names (the same one for the same class, page and mode), and the class
        version the page now shows: the poll is answered by it, never by a version the request names."""
        ticket = Ticket(code, page, mode)
        with self._lock:
            now = self._monotonic()
            token = self._tokens.get(ticket)
            if token is None:
                if len(self._tickets) >= self._max_tickets:
                    self._forget_unused(now)
                if len(self._tickets) >= self._max_tickets:  # all in use: the oldest goes (its page reruns)
                    oldest = min(self._tickets, key=lambda t: self._tickets[t][1])
                    del self._tokens[self._tickets.pop(oldest)[0]]
                token = secrets.token_urlsafe(12)
                self._tokens[ticket] = token
            self._tickets[token] = (ticket, now, version)
            return token

    def ticket(self, token: str) -> tuple[Ticket, int | None] | None:
        """The ticket behind ``token`` and the version its page shows (marked used now); None when unknown."""
        with self._lock:
            found = self._tickets.get(token)
            if found is None:
                return None
            ticket, _, version = found
            self._tickets[token] = (ticket, self._monotonic(), version)
            return ticket, version

    def _forget_unused(self, now: float) -> None:
        for token, (ticket, used, _) in list(self._tickets.items()):
            if now - used >= self._ticket_ttl_s:
                del self._tickets[token]
                self._tokens.pop(ticket, None)

    # ---- long polls (the event loop) -----------------------------------------------------------------
    async def wait(self, token: str) -> Answer:
        """MOVED once the class of ``token`` is past the version its page shows, SAME after timeout_s (or when a
        newer poll of the same ticket arrives: one held poll a ticket, so an abandoned one is freed at once),
        BUSY when too many polls are held, UNKNOWN for a ticket this replica never issued or forgot (the page asks
        again a few times, then reruns and gets a new one: a load balancer that sends a poll to another replica
        costs a rerun every few seconds, not a loop)."""
        found = self.ticket(token)
        if found is None:
            return Answer.UNKNOWN
        ticket, version = found
        now = self._monotonic()
        if ticket.mode is not None and now - self._marked.get(token, -self._mark_every_s) >= self._mark_every_s:
            if len(self._marked) >= self._max_tickets:
                self._marked.clear()
            self._marked[token] = now
            try:
                await asyncio.to_thread(self._mark_seen, ticket.code, ticket.page, ticket.mode)
            except Exception:  # a full class still shows its step; an ended one moves to None below
                pass
        older = self._by_token.pop(token, None)
        if older is not None and not older.done():
            older.set_result(Answer.SAME)  # superseded: that page asked again (or its loop was dropped)
        if self._held >= self._max_waiters:
            return Answer.BUSY
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        held = self._waiters.setdefault(ticket.code, [])
        held.append((version, future))
        self._by_token[token] = future
        self._held += 1
        self._start_reader()
        try:
            done, _ = await asyncio.wait({future}, timeout=self.timeout_s)
            return future.result() if done else Answer.SAME
        finally:
            self._held -= 1
            held.remove((version, future))
            if not held and self._waiters.get(ticket.code) is held:
                del self._waiters[ticket.code]
            if self._by_token.get(token) is future:
                del self._by_token[token]

    @property
    def held(self) -> int:
        """Polls held now."""
        return self._held

    def _start_reader(self) -> None:
        if self._reader is None or self._reader.done() or self._reader.get_loop() is not asyncio.get_running_loop():
            self._reader = asyncio.get_running_loop().create_task(self._read_loop(), name="pykv-follow-reader")

    async def _read_loop(self) -> None:
        while self._waiters:
            codes = list(self._waiters)
            versions = await asyncio.to_thread(self._read_all, codes)
            for code, current in versions.items():
                moved = [
                    future
                    for shown, future in self._waiters.get(code, ())
                    if not future.done() and _moved(shown, current)
                ]
                if moved and code not in self._releasing:
                    self._releasing[code] = asyncio.get_running_loop().create_task(
                        self._release(code, current, moved), name=f"pykv-follow-release-{code}"
                    )
            await asyncio.sleep(self.every_s)

    async def _release(self, code: str, current: object, moved: list[asyncio.Future[Answer]]) -> None:
        """Answer a moved class's pages ``wave`` at a time, the next wave once half the pages answered so far are
        back with a poll on the new version (their rerun is done and on screen), or ``wave_gap_s`` passed. Every
        answered page reruns at once on one interpreter: 200 at a time starved the thread that sends what they
        drew, so each learner saw the step only when all of them had drawn it; a few at a time keep it flowing."""
        loop = asyncio.get_running_loop()
        wave = len(moved) if current is _FAILED else self.wave
        try:
            for start in range(0, len(moved), wave):
                for future in moved[start : start + wave]:
                    if not future.done():
                        future.set_result(Answer.MOVED)
                answered, deadline = start + wave, loop.time() + self.wave_gap_s
                while (
                    answered < len(moved)
                    and self._back(code, current) < answered * BACK_SHARE
                    and loop.time() < deadline
                ):
                    await asyncio.sleep(BACK_CHECK_S)
        finally:
            self._releasing.pop(code, None)

    def _back(self, code: str, version: object) -> int:
        return sum(1 for shown, _ in self._waiters.get(code, ()) if shown == version)

    def _read_all(self, codes: list[str]) -> dict[str, object]:
        versions: dict[str, object] = {}
        for code in codes:
            try:
                versions[code] = self._read(code)
            except Exception:  # an unreachable store: every page of the class reruns and says so
                versions[code] = _FAILED
        return versions

    def check_invariants(self) -> None:
        with self._lock:
            assert len(self._tickets) <= self._max_tickets, len(self._tickets)
            assert len(self._tokens) == len(self._tickets)
            assert all(self._tokens[ticket] == token for token, (ticket, _, _) in self._tickets.items())
        assert all(held for held in self._waiters.values()), "an empty waiter list is dropped"
        assert self._held == sum(len(held) for held in self._waiters.values()), self._held
        assert len(self._by_token) <= self._held


_FAILED = object()  # a version read that raised


def _moved(shown: int | None, current: object) -> bool:
    """Whether a page showing version ``shown`` must rerun: the class is past it, has ended, or could not be read.
    A read older than the page (a replica's cache a beat behind the store the page read) is not a move: versions
    only go up, and answering it would rerun the page until the cache caught up."""
    if current is _FAILED or current is None or shown is None:
        return current is not shown
    return isinstance(current, int) and current > shown
