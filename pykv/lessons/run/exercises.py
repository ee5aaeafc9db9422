"""The "Your turn" self-check: an exercise's ``solved`` checks read on the learner's own Playground Lab.

An exercise is named in a Playground URL as ``exercise=<lesson id>.<step number>`` (steps count from 1,
as the lesson player's ``step=`` does)::

    ./?preset=storm&num_gpu_blocks=64&exercise=what-triggers-preemption.4

``check_exercise`` first makes sure the Lab runs the exercise's workload (the learner may have picked
another preset in the sidebar), then reads every check on the step on screen. ``engine.done`` holds
only when the Lab shows its last step and every request has finished. No Streamlit here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pykv.border.workload import Workload
from pykv.lab.lab import Lab
from pykv.lessons.format.exercise_block import Exercise, PlaygroundLink, goal_text
from pykv.lessons.format.limits import MAX_NAME_CHARS, shown
from pykv.lessons.format.schema import Lesson
from pykv.lessons.values.checks import CheckResult, evaluate
from pykv.lessons.values.paths import Scope

REF = re.compile(r"([a-z0-9]+(?:-[a-z0-9]+)*)\.([0-9]{1,3})")
WORKLOAD_CHECK = "the Playground runs this exercise's workload"


@dataclass(frozen=True)
class ExerciseResult:
    """What the self-check found: ``solved`` when every check passed; ``checks`` in the exercise's order,
    each with ``why`` set to the goal in words (``goal_text``)."""

    solved: bool
    checks: list[CheckResult]
    step: int  # the Lab's step the checks were read at

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]


def exercise_ref(lesson: Lesson, index: int) -> str:
    """``<lesson id>.<step number>`` of the exercise on ``lesson.steps[index]``."""
    return f"{lesson.id}.{index + 1}"


def find_exercise(lessons: list[Lesson], ref: str) -> tuple[Lesson, int, Exercise]:
    """The lesson, step index and exercise ``ref`` names; ValueError (a message for the learner) if none."""
    m = REF.fullmatch(ref or "") if len(ref or "") <= MAX_NAME_CHARS + 4 else None
    if m is None:
        raise ValueError(
            f"exercise={shown(ref)} is not an exercise reference; it reads <lesson id>.<step "
            "number>, like what-triggers-preemption.4. Open the exercise from its lesson."
        )
    lesson = next((lesson for lesson in lessons if lesson.id == m.group(1)), None)
    if lesson is None:
        raise ValueError(f"No lesson has the id {m.group(1)!r}; open the exercise from its lesson.")
    number = int(m.group(2))
    if not 1 <= number <= len(lesson.steps):
        raise ValueError(f"Lesson {lesson.id!r} has steps 1 to {len(lesson.steps)}; there is no step {number}.")
    exercise = lesson.steps[number - 1].exercise
    if exercise is None:
        numbered = [str(i + 1) for i, s in enumerate(lesson.steps) if s.exercise is not None]
        raise ValueError(
            f"Step {number} of lesson {lesson.id!r} has no exercise"
            + (f"; its exercises are at step {', '.join(numbered)}." if numbered else ".")
        )
    return lesson, number - 1, exercise


def link_workload(link: PlaygroundLink, lesson: Lesson) -> tuple[str | None, int, Workload | None]:
    """(preset, seed, workload) of the Lab a link opens: a preset at seed 0 (as the Playground builds it),
    or the lesson's own workload and seed."""
    if link.lesson_workload:
        return None, lesson.seed, lesson.build_workload()
    return link.preset, 0, None


def _same_workload(lab: Lab, link: PlaygroundLink, lesson: Lesson) -> CheckResult:
    if link.lesson_workload:
        want = f"lesson {lesson.id!r}'s own workload"
        ok = lab.preset is None and lab.workload == lesson.build_workload()
        have = want if ok else (f"the {lab.preset} preset" if lab.preset else "another workload")
    else:
        want = f"the {link.preset} preset"
        ok = lab.preset == link.preset and lab.seed == 0
        have = f"the {lab.preset} preset" if lab.preset else "no preset"
    error = (
        None
        if ok
        else (
            f"this exercise runs on {want}, your Playground runs {have}: open the exercise's link again from its lesson"
        )
    )
    return CheckResult(WORKLOAD_CHECK, ok, have, want, WORKLOAD_CHECK, error)


def exercise_scope(lab: Lab) -> Scope:
    """What the checks read: the step on screen, as a lesson step's checks read the state after its actions."""
    requests = lab.workload.requests if lab.workload else []
    order = sorted(range(len(requests)), key=lambda i: requests[i].arrival_step)  # a preset's ids: "0", "1", ...
    arrivals = {requests[i].request_id or str(rank): requests[i].arrival_step for rank, i in enumerate(order)}
    arrivals |= {m.request_id: m.step for m in lab.manual}
    done = lab.cursor == lab.head and lab.engine_done()
    return Scope(
        view=lab.view, config=lab.config, done=done, arrivals=arrivals, history=tuple(lab.snapshots[: lab.cursor + 1])
    )


def check_exercise(exercise: Exercise, lab: Lab, lesson: Lesson) -> ExerciseResult:
    """Evaluate the exercise on ``lab`` (the learner's Playground Lab). Never raises for a value that cannot
    be read: that check fails and says why."""
    workload = _same_workload(lab, exercise.link, lesson)
    if not workload.passed:
        return ExerciseResult(False, [workload], lab.cursor)
    scope = exercise_scope(lab)
    checks = []
    for check in exercise.solved:
        result = evaluate(check, scope)
        checks.append(
            CheckResult(
                result.description, result.passed, result.actual, result.expected, goal_text(check), result.error
            )
        )
    return ExerciseResult(all(c.passed for c in checks), checks, lab.cursor)
