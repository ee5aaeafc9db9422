"""The storage a class lives in: a thin layer, no rules.

``Classes`` (classes.py) holds every rule (who may drive, which answers count, what expires when);
a store only keeps what it is told, atomically, with an expiry, the way Redis would:

    class record   code -> ClassRecord (state + hash of the instructor secret), expires ttl_s after
                   the last add/replace; add is put-if-absent (and under a cap on live classes),
                   replace is compare-and-set on the record's version
    answers        one hash per (class, step): learner -> choice, at most max_learners fields,
                   written only while the record is at a given version (so a step change, a reveal or
                   a lesson change between the rule check and the write makes the write fail)
    presence       one hash per class: learner -> Seen(mode, at)
    version        the record's version alone: the hot path (the long polls ask ten times a second per class)
    publish        tell every replica that a class changed (its new version) or ended (None)

Answers and presence live and die with their class record: they expire with it, a replace refreshes
their expiry with the record's, and a delete removes them. Nothing is ever written for a class that is
not there (a write for a missing class answers GONE).

Stores: ``MemoryStore`` (one process; memory_store.py) and ``RedisStore`` (any number of replicas;
redis_store.py). ``make_store`` (store_factory.py) picks one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from pykv.classroom.state import ClassState


@dataclass(frozen=True)
class ClassRecord:
    """What a store keeps per class: the public state and the SHA-256 (hex) of the instructor secret."""

    state: ClassState
    secret_hash: str


@dataclass(frozen=True)
class Seen:
    """A learner's last heartbeat: what their tab was doing, and when (Classes' clock, seconds)."""

    mode: str
    at: float


class Outcome(enum.Enum):
    """What became of a store write."""

    OK = "ok"  # written
    TAKEN = "taken"  # add_class: the code is in use
    FULL = "full"  # add_class: max_classes live already; put_*: the hash has max_learners other learners
    CHANGED = "changed"  # replace_class / put_answer: the record is no longer at the expected version
    GONE = "gone"  # no such class (never was, deleted or expired)


class ClassStore(Protocol):
    """The storage operations ``Classes`` needs. Each is atomic on its own; none enforces a rule."""

    where: str  # where the classes live, for messages ("in this process", "localhost:6379/0"); no secrets

    def add_class(self, record: ClassRecord, ttl_s: float, max_classes: int) -> Outcome:
        """Put-if-absent: OK, TAKEN (the code is in use) or FULL (``max_classes`` live classes)."""

    def get_class(self, code: str) -> ClassRecord | None: ...

    def replace_class(self, record: ClassRecord, expected_version: int, ttl_s: float, clear_answers: bool) -> Outcome:
        """Compare-and-set on the version: OK, CHANGED or GONE. Refreshes the expiry of the record and of
        everything the class holds to ``ttl_s``; ``clear_answers`` drops every step's answers."""

    def delete_class(self, code: str) -> bool:
        """Drop the record, its answers and its presence; whether there was a record."""

    def version(self, code: str) -> int | None:
        """The record's version, or None when there is no such class. Must be cheap."""

    def publish(self, code: str, version: int | None) -> None:
        """Announce a change (the new version) or the end (None) of a class to every replica."""

    def put_answer(
        self, code: str, step: int, learner: str, choice: str, at_version: int, max_learners: int
    ) -> Outcome:
        """Set ``learner``'s answer to ``step`` if the record is still at ``at_version``: OK, CHANGED, FULL
        (``max_learners`` other learners answered) or GONE."""

    def answers(self, code: str, step: int) -> dict[str, str]:
        """learner -> choice for one step (empty when none, or no such class)."""

    def answer(self, code: str, step: int, learner: str) -> str | None: ...

    def put_seen(self, code: str, learner: str, seen: Seen, max_learners: int) -> Outcome:
        """Record a heartbeat: OK, FULL (``max_learners`` other learners tracked) or GONE."""

    def seen_all(self, code: str) -> dict[str, Seen]: ...

    def drop_seen(self, code: str, learners: list[str]) -> None: ...

    def codes(self) -> list[str]:
        """The codes of every live class (at most the store's cap on classes)."""

    def sweep(self) -> int:
        """Drop expired classes now; how many. A store whose records expire by themselves returns 0."""

    def close(self) -> None:
        """Release connections and threads; the store is not used afterwards."""
