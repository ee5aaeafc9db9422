"""SharedLesson: one lesson's steps computed once per process and read by every session of a class.

A class's instructor and all its followers look at the same steps; playing them once and sharing the
StepStates read-only is what lets a follower need no engine of its own. What makes sharing safe:

- the player's own rule: a StepState never changes once built;
- the states handed out hold **no engine**: each is published with ``lab.branch()``, a copy of its
  history that replays an engine of its own only if a reader asks for one. The player keeps the Labs
  that hold engines to itself, so no session can read an engine another class is stepping;
- playing takes ``lock``; reading a step already played does not (the published list only grows);
- the lesson plays with no time budget: a shared step is computed once for everyone, so an action cut
  short by a busy server must not become every class's step until the process restarts;
- ``prefetch`` plays the step after the class's in the background while the instructor talks, so Next does
  not make the room wait for the engine (it did: the instructor's click was most of a follower's wait).

Derived artefacts (a step's figures, drawn once for every follower) are memoised by ``derived``.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable, Hashable

from pykv.border.config import EngineConfig
from pykv.engine.model.loader import LoadedModel
from pykv.lab.lab import Lab
from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.player import LessonPlayer, StepState

MAX_DERIVED = 256  # memoised artefacts per lesson (a few per step and theme)


class SharedLesson:
    def __init__(self, lesson: Lesson, loaded: LoadedModel, base_config: EngineConfig | None = None) -> None:
        self.lesson = lesson
        self.lock = threading.RLock()  # held while steps are played or an artefact is drawn
        self._player = LessonPlayer(lesson, loaded, base_config, action_budget_s=None)
        self._published: list[StepState] = []  # the player's states with engine-free Labs; only appended to
        self._derived: dict[Hashable, Any] = {}
        self._prefetch_lock = threading.Lock()  # held by the background play (one at a time per lesson)

    @property
    def num_steps(self) -> int:
        return self._player.num_steps

    def state(self, index: int) -> StepState:
        """Step ``index`` (0-based, clamped to the lesson), played once for everyone if it was not yet."""
        index = max(0, min(int(index), self.num_steps - 1))
        if index < len(self._published):  # played already: no lock, no wait behind another class's play
            return self._published[index]
        with self.lock:
            self._player.goto(index)
            for state in self._player.states[len(self._published) :]:
                self._published.append(dataclasses.replace(state, lab=state.lab.branch()))
            return self._published[index]

    def played(self, index: int) -> bool:
        """Whether step ``index`` is ready to read (``state`` returns at once)."""
        return index < len(self._published)

    def prefetch(self, index: int) -> None:
        """Play step ``index`` in a background thread if it is not played yet (nothing if one is already on).
        Its errors are not kept: the reader who asks for the step later plays it again and sees them."""
        if index >= self.num_steps or index < len(self._published) or not self._prefetch_lock.acquire(blocking=False):
            return

        def play() -> None:
            try:
                self.state(index)
            except Exception:  # noqa: BLE001 - shown to whoever asks for the step, not lost in a thread
                pass
            finally:
                self._prefetch_lock.release()

        threading.Thread(target=play, name=f"prefetch {self.lesson.id} step {index + 1}", daemon=True).start()

    def states(self, upto: int) -> list[StepState]:
        """Steps 0..upto, played as needed (the review pack and the token diffs read earlier steps)."""
        self.state(upto)
        return self._published[: max(0, min(int(upto), self.num_steps - 1)) + 1]

    def branch_lab(self, index: int) -> Lab:
        """A private Lab at step ``index`` for one learner: it replays its own engine when stepped."""
        return self.state(index).lab.branch()

    def derived(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """``build()`` once per ``key`` for every session (e.g. a step's figure in one theme)."""
        found = self._derived.get(key)
        if found is not None:
            return found
        with self.lock:
            if key not in self._derived:
                if len(self._derived) >= MAX_DERIVED:
                    self._derived.pop(next(iter(self._derived)))  # oldest first
                self._derived[key] = build()
            return self._derived[key]
