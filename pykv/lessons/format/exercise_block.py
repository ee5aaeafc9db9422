"""Your turn: a step's optional ```` ```exercise ```` block, a task the learner does in the Playground.

The block names the Playground link the learner starts from, the checks that say the task is done
(read on the learner's own Playground Lab, as ``expect`` checks are read on the lesson's), a hint
ladder and the solution (a link too; hidden from learners, CI checks that it solves the task)::

    ```exercise
    task: Find the smallest num_gpu_blocks at which this storm finishes without a single preemption.
    link: preset=storm&num_gpu_blocks=64          # where the learner starts (a Playground query)
    solved:                                       # checks (expect's syntax) on the learner's Lab
      - {that: engine.done, equals: true, why: every request has finished}
      - {that: metric.pykv:num_preemptions_total, equals: 0, why: not a single preemption}
    hints: ["Halve the pool until it preempts, then go back up."]
    solution: preset=storm&num_gpu_blocks=80      # hidden from learners
    ```

A link is a Playground query: ``preset`` (a workload preset, or ``lesson`` for this lesson's own
workload and seed), optionally ``step``, and any knob the Playground's URL takes (``pykv.border.config.knobs("url")``)
except those the app decides (device, attention backend). Everything is checked when the lesson loads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode

from pydantic import BaseModel, ConfigDict

from pykv.border.config import EngineConfig, knobs
from pykv.border.knob_table import parse_knob_text
from pykv.border.limits import MAX_STEPS
from pykv.border.workload import PRESETS
from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import MAX_CHECKS_PER_STEP, clip, shown

FIELDS = ("task", "link", "solved", "hints", "solution")
LESSON_WORKLOAD = "lesson"  # preset=lesson: the lesson's own workload (the Playground's URL then says preset=none)
MAX_TASK_CHARS = 500
MAX_HINTS, MAX_HINT_CHARS = 6, 300
MAX_LINK_CHARS = 500
_STEP = re.compile(r"[0-9]{1,9}")


@dataclass(frozen=True)
class PlaygroundLink:
    """A parsed Playground query: the workload, the knobs it changes (parsed values) and the step shown."""

    query: str  # as written in the lesson
    preset: str  # a pykv.border.workload preset or "lesson"
    knobs: dict[str, Any]
    step: int = 0

    @property
    def lesson_workload(self) -> bool:
        return self.preset == LESSON_WORKLOAD

    def playground_query(self) -> str:
        """The query the Playground's URL takes: ``preset=none`` for the lesson's workload (the exercise
        reference in the same URL tells the Playground which), the knobs as written, then ``step``."""
        pairs = [("preset", "none" if self.lesson_workload else self.preset)]
        pairs += [(k, v) for k, v in parse_qsl(self.query) if k not in ("preset", "step")]
        pairs += [("step", str(self.step))] if self.step else []
        return urlencode(pairs)


class Exercise(BaseModel):
    """A step's "Your turn" task; ``solved`` holds on the learner's Playground Lab when it is done."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    link: PlaygroundLink
    solved: tuple[Any, ...]  # pykv.lessons.format.step_blocks.Check items (passed in as parse_check)
    hints: tuple[str, ...] = ()
    solution: PlaygroundLink  # hidden from learners; CI plays it and checks it solves the task


def url_knobs() -> dict[str, Any]:
    """The knobs an exercise link may set: the Playground URL's, less those the app decides."""
    return {k.name: k for k in knobs("url") if not k.app_owned}


def parse_link(raw: Any, field: str) -> PlaygroundLink:
    """A Playground query such as ``preset=storm&num_gpu_blocks=64``; FieldError ``field`` if it is not one."""
    if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_LINK_CHARS:
        raise FieldError(
            field,
            f"must be a Playground query like preset=storm&num_gpu_blocks=64 (at most "
            f"{MAX_LINK_CHARS} characters), got {shown(raw)}",
        )
    query = raw.strip().lstrip("?")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise FieldError(
            field,
            f"{shown(query)} is not a query: write key=value pairs joined by &, like preset=storm&num_gpu_blocks=64",
        ) from None
    allowed = url_knobs()
    seen: set[str] = set()
    preset, step, values = None, 0, {}
    for key, text in pairs:
        if key in seen:
            raise FieldError(field, f"{shown(key)} is given twice")
        seen.add(key)
        if key == "preset":
            if text not in PRESETS and text != LESSON_WORKLOAD:
                raise FieldError(
                    field,
                    f"preset={shown(text)} is no workload; use one of {', '.join(PRESETS)} "
                    f"or {LESSON_WORKLOAD} (this lesson's own workload)",
                )
            preset = text
        elif key == "step":
            if not _STEP.fullmatch(text) or int(text) > MAX_STEPS:
                raise FieldError(field, f"step={shown(text)} is not a step number (0 to {MAX_STEPS})")
            step = int(text)
        elif key in allowed:
            try:
                value = parse_knob_text(allowed[key], text)
            except ValueError as e:
                raise FieldError(field, f"{key}={shown(text)}: {e}") from None
            most = allowed[key].maximum
            if isinstance(value, int) and not isinstance(value, bool) and most is not None and value > most:
                raise FieldError(field, f"{key}={value} is above the Playground's limit of {most}")
            values[key] = value
        else:
            owned = key in {k.name for k in knobs("url")}
            raise FieldError(
                field,
                f"{shown(key)} "
                + (
                    "is decided by the app, not by an exercise"
                    if owned
                    else f"is not a Playground link parameter; use preset, step or a knob: {', '.join(allowed)}"
                ),
            )
    if preset is None:
        raise FieldError(field, f"names no workload: add preset=NAME ({', '.join(PRESETS)} or {LESSON_WORKLOAD})")
    try:
        EngineConfig(**values)
    except ValueError as e:
        raise FieldError(field, f"the Playground would refuse these settings: {e}") from None
    return PlaygroundLink(query=query, preset=preset, knobs=values, step=step)


def _texts(raw: Any, field: str, most_items: int, most_chars: int) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) > most_items:
        raise FieldError(field, f"must be a YAML list of at most {most_items} texts, got {shown(raw)}")
    for i, item in enumerate(raw):
        if not isinstance(item, str) or not item.strip() or len(item) > most_chars:
            raise FieldError(f"{field}[{i}]", f"must be text of 1 to {most_chars} characters, got {shown(item)}")
    return tuple(item.strip() for item in raw)


def parse_exercise(raw: Any, parse_check: Callable[[Any], Any]) -> Exercise:
    """The mapping of an ```exercise block, its ``solved`` items read by ``parse_check`` (``Check.parse``);
    FieldError names the field that is wrong. The ``solved`` paths are checked by the loader (it knows the
    requests of the link's workload)."""
    if not isinstance(raw, dict):
        raise FieldError("", f"an exercise block is a YAML mapping ({', '.join(FIELDS)}), got {shown(raw)}")
    for key in raw:
        if key not in FIELDS:
            raise FieldError(clip(str(key), 40), f"unknown field; an exercise block takes {', '.join(FIELDS)}")
    for key in ("task", "link", "solved", "solution"):
        if key not in raw:
            raise FieldError(key, "missing (this field is required)")
    task = raw["task"]
    if not isinstance(task, str) or not task.strip() or len(task) > MAX_TASK_CHARS:
        raise FieldError("task", f"must be text of 1 to {MAX_TASK_CHARS} characters, got {shown(task)}")
    link, solution = parse_link(raw["link"], "link"), parse_link(raw["solution"], "solution")
    if solution.preset != link.preset:
        raise FieldError(
            "solution",
            f"runs preset={solution.preset} but the link starts the learner on "
            f"preset={link.preset}; an exercise keeps its workload",
        )
    solved = raw["solved"]
    if not isinstance(solved, list) or not 1 <= len(solved) <= MAX_CHECKS_PER_STEP:
        raise FieldError(
            "solved",
            f"must be a YAML list of 1 to {MAX_CHECKS_PER_STEP} checks "
            f"({{that: PATH, equals: VALUE, why: ...}}), got {shown(solved)}",
        )
    checks = []
    for i, item in enumerate(solved):
        try:
            checks.append(parse_check(item))
        except FieldError as e:
            raise FieldError(f"solved[{i}]" + (f".{e.field}" if e.field else ""), e.problem) from None
    hints = _texts(raw["hints"], "hints", MAX_HINTS, MAX_HINT_CHARS) if raw.get("hints") is not None else ()
    return Exercise(task=task.strip(), link=link, solved=tuple(checks), hints=hints, solution=solution)


def goal_text(check: Any) -> str:
    """A solved check as the learner reads it: its ``why`` (the goal in words), else the check itself."""
    return check.why if check.why else check.describe()
