"""Two ways through the course: the full course, and the workshop path (the core steps only).

A step whose heading ends in ``{optional}`` deepens a lesson but is not needed for the workshop; every
other step is core. On the workshop path, Next and Prev skip optional steps (their actions still run:
later steps build on the state they leave), and the lesson ends at its last core step::

    steps:  1 core   2 optional   3 core   4 optional
    full:   1 -> 2 -> 3 -> 4            (end at 4)
    core:   1 ------> 3                 (end at 3; the dots still open 2 and 4)

Time: ``minutes`` is the whole lesson, ``core_minutes`` its core steps (required once a step is
optional; equal to ``minutes`` otherwise), so the course list can say how long each path takes.
``core_minutes: 0`` leaves a lesson out of the workshop path (an extension: every step after its first
is optional, and the course list says "full course only").
"""

from __future__ import annotations

from typing import Literal, Sequence

from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.schema import FrontMatter, Lesson, LessonStep

PathName = Literal["full", "core"]
PATHS: dict[str, str] = {"full": "the full course", "core": "the 90-minute workshop path"}


def check_timing(front: FrontMatter, steps: Sequence[LessonStep]) -> None:
    """The front matter's minutes against the steps' markers; FieldError naming the field at fault."""
    if steps and steps[0].optional:
        raise FieldError(
            f"steps[0] ({steps[0].title})",
            "the first step cannot be {optional}: it starts the lesson (and shows its objective) on every path",
        )
    has_optional = any(step.optional for step in steps)
    if front.core_minutes is not None:
        if front.minutes is None:
            raise FieldError("core_minutes", "needs minutes (the whole lesson) beside it")
        if front.core_minutes > front.minutes:
            raise FieldError(
                "core_minutes",
                f"{front.core_minutes} is more than minutes ({front.minutes}); the core steps are part of the lesson",
            )
        if front.core_minutes == 0 and not all(step.optional for step in steps[1:]):
            core = next(step for step in steps[1:] if not step.optional)
            raise FieldError(
                "core_minutes",
                f'0 leaves the lesson out of the workshop path, but step "{core.title}" '
                "is core: mark every step after the first {optional}",
            )
        if not has_optional and front.core_minutes != front.minutes:
            raise FieldError(
                "core_minutes",
                f"{front.core_minutes} differs from minutes ({front.minutes}), but no "
                "step is marked {optional}: mark the steps the workshop skips, or drop "
                "core_minutes",
            )
    elif has_optional and front.minutes is not None:
        raise FieldError(
            "core_minutes",
            "missing: a step is marked {optional}, so say how long the core steps take "
            f"(core_minutes: N, at most minutes: {front.minutes})",
        )


def step_after(lesson: Lesson, index: int, path: PathName) -> int | None:
    """The 0-based step Next goes to from ``index``; None at the end of the lesson on this path."""
    later = [i for i in range(index + 1, len(lesson.steps)) if path == "full" or not lesson.steps[i].optional]
    return later[0] if later else None


def step_before(lesson: Lesson, index: int, path: PathName) -> int | None:
    """The 0-based step Prev goes to from ``index``; None at the first step."""
    earlier = [i for i in range(index) if path == "full" or not lesson.steps[i].optional]
    return earlier[-1] if earlier else None


def lesson_after(lessons: Sequence[Lesson], lesson_id: str, path: PathName) -> Lesson | None:
    """The lesson "Next lesson" opens after ``lesson_id``: the course's next one (on the workshop path, the next one
    it keeps); None after the last, or for a lesson not in ``lessons``."""
    ids = [lesson.id for lesson in lessons]
    if lesson_id not in ids:
        return None
    later = [lesson for lesson in lessons[ids.index(lesson_id) + 1 :] if path == "full" or on_workshop_path(lesson)]
    return later[0] if later else None


def on_workshop_path(lesson: Lesson) -> bool:
    """False for a lesson the workshop path leaves out (``core_minutes: 0``)."""
    return lesson.core_minutes != 0


def lesson_minutes(lesson: Lesson, path: PathName) -> int | None:
    """How long the lesson takes on this path; None when the lesson does not say."""
    if lesson.minutes is None:
        return None
    return lesson.minutes if path == "full" or lesson.core_minutes is None else lesson.core_minutes


def course_minutes(lessons: Sequence[Lesson], path: PathName) -> int:
    """The course's time on this path (lessons without minutes count as 0)."""
    return sum(lesson_minutes(lesson, path) or 0 for lesson in lessons)


def path_named(text: str | None) -> PathName | None:
    """The path a URL's ``path=`` names: None for absent; ValueError for a name that is no path."""
    if text is None or text == "":
        return None
    if text not in PATHS:
        raise ValueError(f"path={text[:20]!r} is not a path; use path=core (the workshop path) or path=full")
    return text  # type: ignore[return-value]
