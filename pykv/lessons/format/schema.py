"""The lesson format as data: a lesson file parses into::

    Lesson ── id, title, summary, seed, config (EngineConfig changes), workload (WorkloadSpec),
      │       objective, takeaway, minutes, core_minutes (the course list and the workshop path)
      └─ steps: [LessonStep ── title, narration, actions: [Action], expect: [Check], notes, predict,
                               optional, differs, focus, exercise]

This module holds the front matter, the step and the lesson; their parts have their own modules:
WorkloadSpec (workload_spec.py), Action and Check (a step's ```actions and ```expect blocks,
step_blocks.py), Prediction, Differs, Exercise (predict.py, differs.py, exercise_block.py). Every model
has ``extra="forbid"``, so an unknown field is an error, never silently ignored (model_base.StrictModel).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from pykv.border.workload import Workload
from pykv.lessons.format.differs import Differs
from pykv.lessons.format.exercise_block import Exercise
from pykv.lessons.format.limits import (
    MAX_LESSON_MINUTES,
    MAX_NAME_CHARS,
    MAX_OBJECTIVE_CHARS,
    MAX_SEED,
    MAX_SUMMARY_CHARS,
    MAX_TAKEAWAY_CHARS,
    MAX_TITLE_CHARS,
)
from pykv.lessons.format.model_base import LESSON_ID, StrictModel
from pykv.lessons.format.predict import Prediction
from pykv.lessons.format.step_blocks import Action, Check
from pykv.lessons.format.workload_spec import WorkloadSpec


class FrontMatter(StrictModel):
    id: str = Field(pattern=LESSON_ID, max_length=MAX_NAME_CHARS)
    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)
    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED, strict=True)
    config: dict[str, Any] = Field(default_factory=dict)
    workload: WorkloadSpec
    objective: str | None = Field(default=None, min_length=1, max_length=MAX_OBJECTIVE_CHARS)  # shown at step 1
    takeaway: str | None = Field(default=None, min_length=1, max_length=MAX_TAKEAWAY_CHARS)  # shown at the end
    minutes: int | None = Field(default=None, ge=1, le=MAX_LESSON_MINUTES, strict=True)  # the whole lesson
    core_minutes: int | None = Field(default=None, ge=0, le=MAX_LESSON_MINUTES, strict=True)  # its core steps

    @field_validator("objective", "takeaway")
    @classmethod
    def _one_line(cls, text: str | None) -> str | None:
        if text is None:
            return None
        if not text.strip():
            raise ValueError("is blank; write one sentence, or leave the field out")
        if "\n" in text.strip():
            raise ValueError("must be one line (a YAML string on one line, or a folded '>' block)")
        return text.strip()


# ```focus: the view a step's narration talks about. The tabs (block_tables ... log) open on it; the others are
# always on screen and are named above the views.
FOCUS_VIEWS = {
    "grid": "the block grid",
    "queues": "the queues",
    "this_step": "This step (narration and log lines)",
    "timeline": "the run timeline",
    "block_tables": "Block tables",
    "requests": "Requests",
    "costs": "Preemption costs",
    "log": "Log (all steps)",
}


class LessonStep(StrictModel):
    title: str
    narration: str  # raw Markdown, {{ path }} templates unfilled
    actions: list[Action] = Field(default_factory=list)
    expect: list[Check] = Field(default_factory=list)
    notes: str | None = None  # speaker notes: the speaker view, folded in the solo player; never projected
    predict: Prediction | None = None  # asked before the actions run; answered by their outcome
    line: int = 0  # the line of its "## " heading in the file
    optional: bool = False  # "## Title {optional}": skipped by the workshop path (pykv.lessons.course.workshop)
    differs: Differs | None = None  # claim / vLLM / pykv callout (pykv.lessons.format.differs)
    focus: str | None = None  # the view the narration talks about (FOCUS_VIEWS): its tab opens, it is named
    exercise: Exercise | None = None  # "Your turn": a task done in the Playground (pykv.lessons.format.exercise_block)


class Lesson(StrictModel):
    id: str
    title: str
    summary: str
    seed: int
    config: dict[str, Any]  # EngineConfig changes over the app's base config
    workload: WorkloadSpec
    steps: list[LessonStep]
    path: Path
    objective: str | None = None
    takeaway: str | None = None
    minutes: int | None = None  # the whole lesson
    core_minutes: int | None = None  # the core steps (None: as minutes; 0: not on the workshop path)

    def build_workload(self) -> Workload:
        """The lesson's workload, seeded, every request named (see WorkloadSpec.build)."""
        return self.workload.build(self.seed)
