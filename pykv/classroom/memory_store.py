"""MemoryStore: the class store of one process (the default; ``PYKV_CLASS_STORE`` unset or "memory").

Rule: it behaves like the Redis store, so ``Classes`` cannot tell them apart. A class is one
``_Entry`` (record, expiry, answers by step, presence); an entry whose expiry has passed is gone to
every read and write (dropped when met) and ``sweep()`` drops all of them at once. Everything a
class holds lives inside its entry, so a delete or an expiry frees it all.

Streamlit runs each browser session on a thread of its own: every method holds ``_lock`` for its
whole body, which makes each operation atomic (the compare-and-set of ``replace_class`` and
``put_answer`` included). Only methods of this class change ``_classes`` and the entries in it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from pykv.classroom.store import ClassRecord, Outcome, Seen


@dataclass
class _Entry:
    record: ClassRecord  # replaced whole by replace_class
    expires_at: float  # clock seconds; refreshed by add/replace
    answers: dict[int, dict[str, str]] = field(default_factory=dict)  # step -> learner -> choice
    seen: dict[str, Seen] = field(default_factory=dict)  # learner -> last heartbeat


class MemoryStore:
    """Classes in a dict of this process, behind one lock; expiry by ``clock`` (time.time by default)."""

    where = "in this process"

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._lock = threading.Lock()
        self._classes: dict[str, _Entry] = {}  # code -> entry; changed only under _lock

    # ---- records ---------------------------------------------------------------------------------
    def add_class(self, record: ClassRecord, ttl_s: float, max_classes: int) -> Outcome:
        with self._lock:
            self._sweep_locked()
            if record.state.code in self._classes:
                return Outcome.TAKEN
            if len(self._classes) >= max_classes:
                return Outcome.FULL
            self._classes[record.state.code] = _Entry(record, self._clock() + ttl_s)
            return Outcome.OK

    def get_class(self, code: str) -> ClassRecord | None:
        with self._lock:
            entry = self._live(code)
            return entry.record if entry else None

    def replace_class(self, record: ClassRecord, expected_version: int, ttl_s: float, clear_answers: bool) -> Outcome:
        with self._lock:
            entry = self._live(record.state.code)
            if entry is None:
                return Outcome.GONE
            if entry.record.state.version != expected_version:
                return Outcome.CHANGED
            entry.record = record
            entry.expires_at = self._clock() + ttl_s
            if clear_answers:
                entry.answers.clear()
            return Outcome.OK

    def delete_class(self, code: str) -> bool:
        with self._lock:
            existed = self._live(code) is not None
            self._classes.pop(code, None)
            return existed

    def version(self, code: str) -> int | None:
        with self._lock:
            entry = self._live(code)
            return entry.record.state.version if entry else None

    def publish(self, code: str, version: int | None) -> None:
        """Nothing to do: every reader of this process reads the same dict."""

    # ---- answers ---------------------------------------------------------------------------------
    def put_answer(
        self, code: str, step: int, learner: str, choice: str, at_version: int, max_learners: int
    ) -> Outcome:
        with self._lock:
            entry = self._live(code)
            if entry is None:
                return Outcome.GONE
            if entry.record.state.version != at_version:
                return Outcome.CHANGED
            answers = entry.answers.get(step, {})
            if learner not in answers and len(answers) >= max_learners:
                return Outcome.FULL
            answers[learner] = choice
            entry.answers[step] = answers
            return Outcome.OK

    def answers(self, code: str, step: int) -> dict[str, str]:
        with self._lock:
            entry = self._live(code)
            return dict(entry.answers.get(step, {})) if entry else {}

    def answer(self, code: str, step: int, learner: str) -> str | None:
        with self._lock:
            entry = self._live(code)
            return entry.answers.get(step, {}).get(learner) if entry else None

    # ---- presence --------------------------------------------------------------------------------
    def put_seen(self, code: str, learner: str, seen: Seen, max_learners: int) -> Outcome:
        with self._lock:
            entry = self._live(code)
            if entry is None:
                return Outcome.GONE
            if learner not in entry.seen and len(entry.seen) >= max_learners:
                return Outcome.FULL
            entry.seen[learner] = seen
            return Outcome.OK

    def seen_all(self, code: str) -> dict[str, Seen]:
        with self._lock:
            entry = self._live(code)
            return dict(entry.seen) if entry else {}

    def drop_seen(self, code: str, learners: list[str]) -> None:
        with self._lock:
            entry = self._live(code)
            if entry:
                for learner in learners:
                    entry.seen.pop(learner, None)

    def codes(self) -> list[str]:
        with self._lock:
            self._sweep_locked()
            return list(self._classes)

    # ---- expiry ----------------------------------------------------------------------------------
    def sweep(self) -> int:
        with self._lock:
            return self._sweep_locked()

    def close(self) -> None:
        with self._lock:
            self._classes.clear()

    def holds(self, code: str) -> bool:
        """Whether anything at all is kept for ``code`` (expired or not): tests check an end frees all."""
        with self._lock:
            return code in self._classes

    def check_invariants(self) -> None:
        with self._lock:
            for code, entry in self._classes.items():
                assert entry.record.state.code == code, (code, entry.record.state.code)
                assert entry.record.state.version >= 1 and entry.record.state.step >= 1, entry.record.state
                assert all(step >= 1 for step in entry.answers), sorted(entry.answers)

    def _live(self, code: str) -> _Entry | None:
        """The entry for ``code`` unless it expired (then it is dropped). Caller holds _lock."""
        entry = self._classes.get(code)
        if entry is not None and self._clock() >= entry.expires_at:
            del self._classes[code]
            return None
        return entry

    def _sweep_locked(self) -> int:
        now = self._clock()
        expired = [code for code, entry in self._classes.items() if now >= entry.expires_at]
        for code in expired:
            del self._classes[code]
        return len(expired)
