"""Classes: the rules of class mode, over any ClassStore.

An instructor ``start``s a class on a lesson and gets its code (for the room) and a secret (kept by
the instructor's browser only; the store keeps its SHA-256). Learners join with the code and follow
``get(code)``, asking ``version(code)`` (the long polls, ten times a second per class) and re-reading only when it
moved.

    start -> version 1 --drive(step=4)--> version 2 --drive(revealed=True)--> version 3 --end--> gone
                          (revealed=False: a new step's question is open)      (answers closed)

The rules, all here and none in the stores:

- Only the secret's holder drives or ends a class (NotInstructor otherwise). A drive that changes
  nothing changes nothing: no version bump, no new ``updated_at``, no longer life.
- Changing lesson or step closes the reveal (``revealed=False``) unless the same drive sets it;
  changing lesson also drops the previous lesson's answers (its steps are not this lesson's).
- A class whose instructor has done nothing for ``idle_s`` is gone (store TTL; and by this clock); one
  that no learner has joined yet is gone after ``unjoined_s`` (when set: the app sets UNJOINED_S), so a
  script that starts classes cannot hold the server's slots for hours.
- Starting a class: the ``instructor_key`` passphrase (or the ``admin_key``) when the server has one (the app
  always has one unless the host opted out: pykv/classroom/host_keys.py); at most MAX_CLASSES_PER_OWNER live
  classes per owner (the app passes the browser session and the client address; counted on this replica), and,
  without a key, at most ``open_rate`` = (starts, seconds) class starts on this replica in any such window: a
  client address is no proof of anything behind a same-host proxy or tunnel, and each new tab is a new session,
  so the caps per owner alone let one visitor start every class. An owner is remembered while it holds a
  live class (never forgotten to make room: refused starts add nobody). An ``admin_key`` (the operator's) drives
  or ends any class.
- An answer counts only for the class's current step while it is not revealed, is one of the
  question's choices, and is one per learner per step (the last wins). The store writes it only if
  the class is still at the version the rules were checked against, so an answer racing a step
  change or a reveal is checked again rather than slipped in.
- Presence counts learners whose last heartbeat is younger than PRESENCE_S; older ones are dropped
  when the headcount is read, or when the class is full of them. With ``heartbeat_s`` (the app: HEARTBEAT_S)
  a learner's heartbeat is written at most that often per class and mode (each page run and long poll renews it).
"""

from __future__ import annotations

import hmac
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Callable

from pykv.classroom import inputs
from pykv.classroom.codes import hash_secret, is_code, new_code, new_secret, normalize_code, secret_matches
from pykv.classroom.errors import ClassError, ClassNotFound, NotInstructor
from pykv.classroom.limits import (
    CLASS_IDLE_S,
    MAX_CLASSES,
    MAX_CLASSES_PER_OWNER,
    MAX_LEARNERS,
    MAX_PASSPHRASE_CHARS,
    PRESENCE_S,
)
from pykv.classroom.state import ClassState, Presence
from pykv.classroom.store import ClassRecord, ClassStore, Outcome, Seen

_CODE_ATTEMPTS = 32  # fresh codes tried before giving up (1 in 32**6 is taken per running class)
_WRITE_ATTEMPTS = 8  # compare-and-set retries when another writer got there first
_MAX_KNOWN = 10_000  # codes remembered as joined / heartbeats, before the memory is cleared (owners: pruned, below)


def _same(given: str | None, expected: str | None) -> bool:
    """Whether a typed passphrase is ``expected`` (constant time; never when either is empty)."""
    if not expected or not isinstance(given, str) or not given or len(given) > MAX_PASSPHRASE_CHARS:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


class Classes:
    """Class mode's rules over ``store``; ``clock`` gives seconds (time.time; tests pass a fake)."""

    def __init__(
        self,
        store: ClassStore,
        idle_s: float = CLASS_IDLE_S,
        clock: Callable[[], float] = time.time,
        *,
        unjoined_s: float | None = None,
        instructor_key: str | None = None,
        admin_key: str | None = None,
        heartbeat_s: float = 0.0,
        open_rate: tuple[int, float] | None = None,
    ):
        if not isinstance(idle_s, (int, float)) or not 0 < idle_s <= 30 * 24 * 3600:
            raise ValueError(f"idle_s must be a number of seconds above 0 and at most 30 days, got {idle_s!r}")
        if unjoined_s is not None and not 0 < unjoined_s <= idle_s:
            raise ValueError(f"unjoined_s must be above 0 and at most idle_s, got {unjoined_s!r}")
        self.store = store
        self.idle_s = float(idle_s)
        self.unjoined_s = None if unjoined_s is None else float(unjoined_s)
        self._clock = clock
        self._instructor_key = instructor_key or None
        self._admin_key = admin_key or None
        self._lock = threading.Lock()
        self._owned: dict[str, list[str]] = {}  # owner -> live codes it started (no empty lists); under _lock
        self._open_rate = open_rate
        self._open_starts: deque[float] = deque()  # when keyless starts succeeded (this clock); under _lock
        self._joined: set[str] = set()  # codes known to be joined (no more checks per heartbeat)
        self._heartbeat_s = float(heartbeat_s)
        self._beats: dict[tuple[str, str, str], float] = {}  # (code, learner, mode) -> when last written

    @property
    def needs_passphrase(self) -> bool:
        """Whether starting a class needs the instructor passphrase (PYKV_INSTRUCTOR_KEY)."""
        return self._instructor_key is not None

    def _ttl(self, state: ClassState) -> float:
        return self.idle_s if state.joined or self.unjoined_s is None else self.unjoined_s

    normalize_code = staticmethod(normalize_code)

    # ---- the instructor ----------------------------------------------------------------------------
    def start(
        self, lesson_id: str, step: int = 1, *, owners: Sequence[str] = (), passphrase: str | None = None
    ) -> tuple[ClassState, str]:
        """A new class on ``lesson_id`` at ``step``: its state and the instructor secret (shown nowhere).
        ``owners``: who starts it (e.g. "session:ID", "ip:ADDR"), each held to MAX_CLASSES_PER_OWNER."""
        lesson_id, step = inputs.lesson_id(lesson_id), inputs.step(step)
        keyed = self._instructor_key is not None
        if keyed and not (_same(passphrase, self._instructor_key) or _same(passphrase, self._admin_key)):
            raise ClassError(
                "Starting a class needs this server's instructor passphrase (PYKV_INSTRUCTOR_KEY, or the one the "
                "server printed in its terminal when it started): type it in the field, or ask the workshop host."
            )
        with self._lock:  # the checks and the start together: two tabs of one owner cannot both pass the cap
            for owner in owners:
                live = self._live(owner)
                if len(live) >= MAX_CLASSES_PER_OWNER:
                    raise ClassError(
                        f"This browser (or its network address) already runs {MAX_CLASSES_PER_OWNER} "
                        "classes: end one of them first (a class nobody joins ends by itself)."
                    )
            if not keyed:
                self._check_open_rate()
            state, secret = self._add(lesson_id, step)
            if not keyed:
                self._open_starts.append(self._clock())
            if len(self._owned) >= _MAX_KNOWN:
                self._prune_owned()
            for owner in owners:
                self._owned.setdefault(owner, []).append(state.code)
        return state, secret

    def _live(self, owner: str) -> list[str]:
        """``owner``'s live classes; an owner with none is forgotten (under _lock)."""
        live = [code for code in self._owned.get(owner, ()) if self.store.version(code) is not None]
        if live:
            self._owned[owner] = live
        else:
            self._owned.pop(owner, None)
        return live

    def _prune_owned(self) -> None:
        """Forget the ended classes of every owner (under _lock): only owners with a live class stay, at most
        MAX_CLASSES per owner kind, so an owner at its cap is never forgotten to make room."""
        for owner in list(self._owned):
            self._live(owner)

    def _check_open_rate(self) -> None:
        """Without a key: at most ``open_rate`` starts in any window (under _lock)."""
        if self._open_rate is None:
            return
        limit, window = self._open_rate
        now = self._clock()
        while self._open_starts and now - self._open_starts[0] >= window:
            self._open_starts.popleft()
        if len(self._open_starts) >= limit:
            wait = window - (now - self._open_starts[0])
            raise ClassError(
                f"This server starts at most {limit} classes every {window / 60:g} minutes without an instructor "
                f"key, and that many started lately: try again in {max(1, round(wait / 60))} min, or ask the "
                "workshop host to set PYKV_INSTRUCTOR_KEY."
            )

    def _add(self, lesson_id: str, step: int) -> tuple[ClassState, str]:
        secret = new_secret()
        now = self._clock()
        for _ in range(_CODE_ATTEMPTS):
            state = ClassState(
                code=new_code(),
                lesson_id=lesson_id,
                step=step,
                revealed=False,
                version=1,
                created_at=now,
                updated_at=now,
                step_at=now,
            )
            outcome = self.store.add_class(ClassRecord(state, hash_secret(secret)), self._ttl(state), MAX_CLASSES)
            if outcome is Outcome.OK:
                self.store.publish(state.code, state.version)
                return state, secret
            if outcome is Outcome.FULL:
                raise ClassError(
                    f"The server is full: it already runs {MAX_CLASSES} classes. Try again later, "
                    "or end a class that is no longer used."
                )
        raise ClassError("Could not find a free class code: try again.")

    def drive(
        self,
        code: str,
        secret: str,
        *,
        lesson_id: str | None = None,
        step: int | None = None,
        revealed: bool | None = None,
    ) -> ClassState:
        """Move the class (lesson, step, reveal); the state after. See the module's rules."""
        code = normalize_code(code)
        lesson_id = None if lesson_id is None else inputs.lesson_id(lesson_id)
        step = None if step is None else inputs.step(step)
        revealed = None if revealed is None else inputs.revealed(revealed)
        for _ in range(_WRITE_ATTEMPTS):
            record = self._instructor_record(code, secret)
            old = record.state
            new_lesson = old.lesson_id if lesson_id is None else lesson_id
            new_step = old.step if step is None else step
            moved = (new_lesson, new_step) != (old.lesson_id, old.step)
            new_revealed = revealed if revealed is not None else (False if moved else old.revealed)
            if not moved and new_revealed == old.revealed:
                return old
            now = self._clock()
            new = replace(
                old,
                lesson_id=new_lesson,
                step=new_step,
                revealed=new_revealed,
                version=old.version + 1,
                updated_at=now,
                step_at=now if moved else old.step_at,
            )
            outcome = self.store.replace_class(
                replace(record, state=new), old.version, self._ttl(new), clear_answers=new_lesson != old.lesson_id
            )
            if outcome is Outcome.OK:
                self.store.publish(code, new.version)
                return new
            if outcome is Outcome.GONE:
                raise ClassNotFound(code)
        raise ClassError(f"Class {code} is being changed from another tab right now: try again.")

    def end(self, code: str, secret: str) -> None:
        """End the class: its record, answers and presence are dropped; followers see it gone."""
        code = normalize_code(code)
        self._instructor_record(code, secret)
        self.store.delete_class(code)
        self.store.publish(code, None)

    def end_all(self, admin_key: str) -> int:
        """The operator's reset: end every live class; how many. Needs the server's admin key."""
        if not _same(admin_key, self._admin_key):
            raise ClassError("Ending every class needs this server's admin key (PYKV_ADMIN_KEY).")
        codes = self.store.codes()
        for code in codes:
            self.store.delete_class(code)
            self.store.publish(code, None)
        return len(codes)

    def is_instructor(self, code: str, secret: str | None) -> bool:
        """Whether ``secret`` drives class ``code`` (False when the class is gone or the code is garbage)."""
        try:
            record = self._record(normalize_code(code))
        except ClassError:
            return False
        return record is not None and (secret_matches(secret, record.secret_hash) or _same(secret, self._admin_key))

    # ---- everyone ----------------------------------------------------------------------------------
    def get(self, code: str) -> ClassState:
        code = normalize_code(code)
        return self._require(code).state

    def version(self, code: str) -> int | None:
        """The class's version, None when it is gone: the cheap call the followers' long polls make."""
        return self.store.version(code if is_code(code) else normalize_code(code))

    def sweep_expired(self) -> int:
        """Drop the classes idle longer than idle_s now; how many (0 where the store expires them itself)."""
        return self.store.sweep()

    # ---- learners ----------------------------------------------------------------------------------
    def answer(self, code: str, learner: str, step: int, choice: str, choices: Sequence[str]) -> None:
        """Record ``learner``'s answer to the question of ``step`` (the last answer of a learner wins)."""
        code, learner, step = normalize_code(code), inputs.learner(learner), inputs.step(step)
        choice = inputs.choice(choice, choices)
        for _ in range(_WRITE_ATTEMPTS):
            state = self._require(code).state
            if step != state.step:
                raise ClassError(
                    f"This question is from step {step}, but the class has moved on to step "
                    f"{state.step}: answer the question on screen now."
                )
            if state.revealed:
                raise ClassError("The instructor has revealed this step's answer: answers are closed.")
            outcome = self.store.put_answer(code, step, learner, choice, state.version, MAX_LEARNERS)
            if outcome is Outcome.OK:
                return
            if outcome is Outcome.GONE:
                raise ClassNotFound(code)
            if outcome is Outcome.FULL:
                raise ClassError(f"Class {code} is full: {MAX_LEARNERS} learners have answered this question.")
        raise ClassError(f"Class {code} is changing step right now: answer again.")

    def tally(self, code: str, step: int) -> dict[str, int]:
        """choice -> number of learners whose (last) answer to ``step`` it is."""
        code, step = normalize_code(code), inputs.step(step)
        self._require(code)
        return dict(Counter(self.store.answers(code, step).values()))

    def answer_of(self, code: str, learner: str, step: int) -> str | None:
        code, learner, step = normalize_code(code), inputs.learner(learner), inputs.step(step)
        self._require(code)
        return self.store.answer(code, step, learner)

    def seen(self, code: str, learner: str, mode: str) -> None:
        """A learner's heartbeat: their tab is in the class, ``following`` the instructor or ``exploring``."""
        code, learner, mode = normalize_code(code), inputs.learner(learner), inputs.mode(mode)
        now = self._clock()
        beat = (code, learner, mode)
        last = self._beats.get(beat)
        if last is not None and now - last < self._heartbeat_s:
            return  # written less than heartbeat_s ago: batched (presence lasts PRESENCE_S)
        outcome = self.store.put_seen(code, learner, Seen(mode, now), MAX_LEARNERS)
        if outcome is Outcome.FULL:
            self._drop_stale(code, now)
            outcome = self.store.put_seen(code, learner, Seen(mode, now), MAX_LEARNERS)
        if outcome is Outcome.GONE:
            raise ClassNotFound(code)
        if outcome is Outcome.FULL:
            raise ClassError(
                f"Class {code} is full: {MAX_LEARNERS} learners are connected. "
                "Ask your instructor to start a second class."
            )
        if len(self._beats) >= _MAX_KNOWN:
            self._beats.clear()
        self._beats[beat] = now
        if code not in self._joined:
            self._mark_joined(code)

    def presence(self, code: str) -> Presence:
        """Learners seen within PRESENCE_S, following and exploring; older heartbeats are dropped."""
        code = normalize_code(code)
        self._require(code)
        fresh = self._drop_stale(code, self._clock())
        following = sum(1 for seen in fresh if seen.mode == "following")
        return Presence(connected=len(fresh), following=following, exploring=len(fresh) - following)

    def _mark_joined(self, code: str) -> None:
        """The first learner of a class: it now lives its full idle time (same version: nobody reruns)."""
        record = self.store.get_class(code)
        if record is None:
            return
        if not record.state.joined:
            joined = replace(record, state=replace(record.state, joined=True))
            if (
                self.store.replace_class(joined, record.state.version, self.idle_s, clear_answers=False)
                is not Outcome.OK
            ):
                return  # changed meanwhile: the next heartbeat tries again
        if len(self._joined) >= _MAX_KNOWN:
            self._joined.clear()
        self._joined.add(code)

    # ---- helpers -------------------------------------------------------------------------------------
    def _record(self, code: str) -> ClassRecord | None:
        """The class's record, None when it is gone (also when idle_s passed by this clock and the store
        has not expired it yet)."""
        record = self.store.get_class(code)
        if record is None or self._clock() - record.state.updated_at >= self._ttl(record.state):
            return None
        return record

    def _require(self, code: str) -> ClassRecord:
        record = self._record(code)
        if record is None:
            raise ClassNotFound(code)
        return record

    def _instructor_record(self, code: str, secret: str | None) -> ClassRecord:
        record = self._require(code)
        if not secret_matches(secret, record.secret_hash) and not _same(secret, self._admin_key):
            raise NotInstructor(code)
        return record

    def _drop_stale(self, code: str, now: float) -> list[Seen]:
        """Drop heartbeats older than PRESENCE_S; the fresh ones."""
        seen = self.store.seen_all(code)
        stale = [learner for learner, s in seen.items() if now - s.at >= PRESENCE_S]
        if stale:
            self.store.drop_seen(code, stale)
        return [s for s in seen.values() if now - s.at < PRESENCE_S]
