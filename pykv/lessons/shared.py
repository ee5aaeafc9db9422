"""SharedLesson: one lesson's steps computed once per process and read by every session of a class.

A class's instructor and all its followers look at the same steps; playing them once and sharing the
StepStates read-only is what lets a follower need no engine of its own. The rule that makes sharing safe
is the player's own: a StepState never changes once built. Two things could still move a shared Lab, and
both are guarded here:

- playing a step forks the previous step's Lab (``LessonPlayer``): only under ``lock``;
- a learner exploring on their own gets ``branch()``, which replays an engine of its own and never takes
  the shared one.

Derived artefacts (a step's figures, drawn once for every follower) are memoised by ``derived``.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, Optional

from pykv.config import EngineConfig
from pykv.lab import Lab
from pykv.lessons.player import LessonPlayer, StepState
from pykv.lessons.schema import Lesson
from pykv.loader import LoadedModel

MAX_DERIVED = 256  # memoised artefacts per lesson (a few per step and theme)


class SharedLesson:
    def __init__(self, lesson: Lesson, loaded: LoadedModel, base_config: Optional[EngineConfig] = None,
                 action_budget_s: Optional[float] = None) -> None:
        self.lesson = lesson
        self.lock = threading.RLock()  # held while a step is played, a Lab branched or an artefact drawn
        self._player = LessonPlayer(lesson, loaded, base_config, action_budget_s=action_budget_s)
        self._derived: dict[Hashable, Any] = {}

    @property
    def num_steps(self) -> int:
        return self._player.num_steps

    def state(self, index: int) -> StepState:
        """Step ``index`` (0-based, clamped to the lesson), playing the steps before it once for everyone."""
        with self.lock:
            index = self._player.goto(index)
            return self._player.states[index]

    def states(self, upto: int) -> list[StepState]:
        """Steps 0..upto, played as needed (the review pack and the token diffs read earlier steps)."""
        with self.lock:
            self._player.goto(upto)
            return self._player.states[:upto + 1]

    def branch_lab(self, index: int) -> Lab:
        """A private Lab at step ``index`` for one learner: it replays its own engine when stepped."""
        with self.lock:
            return self.state(index).lab.branch()

    def derived(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """``build()`` once per ``key`` for every session (e.g. a step's figure in one theme)."""
        with self.lock:
            if key not in self._derived:
                if len(self._derived) >= MAX_DERIVED:
                    self._derived.pop(next(iter(self._derived)))  # oldest first
                self._derived[key] = build()
            return self._derived[key]
