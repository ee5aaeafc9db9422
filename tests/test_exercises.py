""""Your turn" exercises: every exercise of the course is solvable in the Playground with the shipped model.

For each exercise the test builds the Lab a learner has after opening a link in the Playground (the
URL parsed by the Playground's own ``config_from_query``, the workload it would build): at the start
link the exercise is not solved, neither as opened nor run to its end (the learner must change
something); at the solution (opened at its step, or run to the end when it names none) it is.
Then the ```exercise block's format: what loads, and the messages for what does not.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from pykv.lab import Lab
from pykv.lessons import LessonError, load_course, parse_lesson
from pykv.lessons.exercise_block import PlaygroundLink
from pykv.lessons.exercises import check_exercise, exercise_ref, find_exercise, link_workload
from pykv.lessons.schema import Lesson
from pykv.loader import load_model
from pykv.ui.state import config_from_query, default_config

COURSE = load_course()
EXERCISES = [(lesson, i) for lesson in COURSE for i, step in enumerate(lesson.steps) if step.exercise is not None]


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny", "cpu", "float32")


def playground_lab(link: PlaygroundLink, lesson: Lesson, loaded) -> Lab:
    """The Lab the Playground builds for ``link`` (as ``pykv.ui.state.lab_from_url`` and the exercise panel do)."""
    config, problems = config_from_query(dict(parse_qsl(link.playground_query())), default_config())
    assert not problems, problems
    preset, seed, workload = link_workload(link, lesson)
    lab = Lab(config, loaded, preset, seed, workload=workload)
    lab.check_workload()
    lab.goto(link.step)
    assert lab.cursor == link.step, f"the link asks for step {link.step}; the run ends at step {lab.cursor}"
    return lab


def _failed(result) -> str:
    return "; ".join(f"{c.why or c.description}: {c.error or repr(c.actual)}" for c in result.failed)


def test_every_lesson_has_an_exercise():
    numbered = [lesson for lesson in COURSE if lesson.path.name[:2].isdigit() and int(lesson.path.name[:2]) <= 15]
    missing = [lesson.path.name for lesson in numbered if not any(step.exercise for step in lesson.steps)]
    assert not missing, f"lessons without a ```exercise block: {missing}"


@pytest.mark.parametrize("lesson, index", EXERCISES, ids=[exercise_ref(lesson, i) for lesson, i in EXERCISES])
def test_the_exercise_is_solvable_and_not_solved_at_its_start(lesson, index, tiny):
    exercise = lesson.steps[index].exercise
    assert find_exercise(COURSE, exercise_ref(lesson, index)) == (lesson, index, exercise)
    start = playground_lab(exercise.link, lesson, tiny)
    assert not check_exercise(exercise, start, lesson).solved, "solved as the link opens"
    start.run_to_end(time_budget_s=None)
    assert start.at_end()
    assert not check_exercise(exercise, start, lesson).solved, "solved by running the start link to its end"
    solution = playground_lab(exercise.solution, lesson, tiny)
    if not exercise.solution.step:
        solution.run_to_end(time_budget_s=None)
        assert solution.at_end()
    result = check_exercise(exercise, solution, lesson)
    assert result.solved, f"the solution {exercise.solution.query} does not solve it: {_failed(result)}"
    assert all(c.why for c in result.checks), "every check reads as a goal in words"
