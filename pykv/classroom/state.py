"""What a class looks like from outside: the state every follower renders, and the instructor's headcount.

Both are frozen: ``Classes`` hands out a new ``ClassState`` on every change and never mutates one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClassState:
    """One running class. The instructor changes ``lesson_id``, ``step`` and ``revealed``; every such
    change bumps ``version`` by one and sets ``updated_at``, so a follower that saw version v has
    nothing new to render until ``Classes.version()`` says otherwise."""

    code: str  # CODE_LENGTH characters of CODE_ALPHABET, unique among running classes
    lesson_id: str
    step: int  # 1-based lesson step the class is on
    revealed: bool  # the current step's prediction has been revealed by the instructor (answers closed)
    version: int  # 1 at start, +1 on every change the instructor makes
    created_at: float  # clock seconds
    updated_at: float  # last instructor action; the idle expiry (CLASS_IDLE_S) counts from here
    step_at: float = 0.0  # when the class came to this lesson step (a reveal does not move it); 0: unknown
    joined: bool = False  # a learner has been seen: until then the class ends UNJOINED_S after updated_at


@dataclass(frozen=True)
class Presence:
    """Learners seen within PRESENCE_S, by what their tab is doing: ``connected = following + exploring``."""

    connected: int
    following: int  # tabs following the instructor's step
    exploring: int  # tabs in the class but looking around on their own
