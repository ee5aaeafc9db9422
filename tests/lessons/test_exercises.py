""" "Your turn" exercises: every exercise of the course is solvable in the Playground with the shipped model.

For each exercise the test builds the Lab a learner has after opening a link in the Playground (the
URL parsed by the Playground's own ``config_from_query``, the workload it would build): at the start
link the exercise is not solved, neither as opened nor run to its end (the learner must change
something); at the solution (opened at its step, or run to the end when it names none) it is.
Then the ```exercise block's format: what loads, and the messages for what does not.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

import pytest

from pykv.lab.lab import Lab
from pykv.lessons import LessonError, load_course, parse_lesson
from pykv.lessons.format.exercise_block import PlaygroundLink
from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.exercises import check_exercise, exercise_ref, find_exercise, link_workload
from pykv.ui.session.state import config_from_query, default_config

COURSE = load_course()
EXERCISES = [(lesson, i) for lesson in COURSE for i, step in enumerate(lesson.steps) if step.exercise is not None]


def playground_lab(link: PlaygroundLink, lesson: Lesson, loaded) -> Lab:
    """The Lab the Playground builds for ``link`` (as ``pykv.ui.session.state.lab_from_url`` and the exercise
    panel do)."""
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
    missing = [lesson.path.name for lesson in COURSE if not any(step.exercise for step in lesson.steps)]
    assert not missing, f"lessons without a ```exercise block: {missing}"
    optional = [exercise_ref(lesson, i) for lesson, i in EXERCISES if lesson.steps[i].optional]
    assert not optional, f"exercises on {{optional}} steps, which the workshop path skips: {optional}"


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


# ---- the block's format ------------------------------------------------------------------------------

LESSON = """---
id: exercise-format
title: Exercise format
summary: One step with an exercise.
workload:
  requests:
    - {{request_id: a, prompt: "def add(x, y):", max_tokens: 4, ignore_eos: true}}
---

## Your turn

Narration.

```exercise
{block}
```
"""
GOOD = """task: Find it.
link: preset=lesson&num_gpu_blocks=16&step=2
solved:
  - {that: request.a.status, equals: running, why: a runs}
hints: ["one", "two"]
solution: preset=lesson&num_gpu_blocks=8"""


def parse(block: str):
    return parse_lesson(LESSON.format(block=block), "lessons/99-exercise-format.md")


def test_a_good_block_loads_with_its_links_parsed():
    exercise = parse(GOOD).steps[0].exercise
    assert (exercise.task, exercise.hints, len(exercise.solved)) == ("Find it.", ("one", "two"), 1)
    assert exercise.link.lesson_workload and exercise.link.knobs == {"num_gpu_blocks": 16} and exercise.link.step == 2
    assert exercise.link.playground_query() == "preset=none&num_gpu_blocks=16&step=2"
    assert exercise.solution.knobs == {"num_gpu_blocks": 8} and exercise.solution.step == 0
    assert exercise.solved[0].why == "a runs"


@pytest.mark.parametrize(
    "change, words",
    [
        (("solution: preset=lesson&num_gpu_blocks=8", ""), ["exercise.solution", "missing"]),
        (("task: Find it.", "task: Find it.\ncolour: red"), ["exercise.colour", "unknown field", "task, link, solved"]),
        (("step=2", "step=2&foo=1"), ["exercise.link", "'foo' is not a Playground link parameter", "num_gpu_blocks"]),
        (("step=2", "step=2&device=cuda"), ["exercise.link", "'device' is decided by the app"]),
        (("link: preset=lesson", "link: preset=nope"), ["exercise.link", "preset='nope' is no workload", "storm"]),
        (("num_gpu_blocks=16", "num_gpu_blocks=9999"), ["exercise.link", "above the Playground's limit of 512"]),
        (("num_gpu_blocks=16", "num_gpu_blocks=lots"), ["exercise.link", "must be a whole number"]),
        (("num_gpu_blocks=16", "num_gpu_blocks=16&num_gpu_blocks=8"), ["exercise.link", "given twice"]),
        (("num_gpu_blocks=16", "num_cpu_blocks=16"), ["exercise.link", "would refuse these settings", "v0.6"]),
        (("step=2", "step=two"), ["exercise.link", "step='two' is not a step number"]),
        (("link: preset=lesson&num_gpu_blocks=16&step=2", "link: just words"), ["exercise.link", "is not a query"]),
        (("link: preset=lesson&num_gpu_blocks=16&step=2", "link: num_gpu_blocks=16"), ["names no workload"]),
        (("solution: preset=lesson", "solution: preset=storm"), ["exercise.solution", "keeps its workload"]),
        (("request.a.status", "request.zz.status"), ["exercise.solved[0].that", "'zz'"]),
        (("request.a.status", "run.x.steps"), ["exercise.solved[0].that", "run"]),
        (("equals: running", "bigger: running"), ["exercise.solved[0]", "unknown operator"]),
        (('hints: ["one", "two"]', "hints: one"), ["exercise.hints", "YAML list"]),
    ],
)
def test_a_bad_block_names_the_field_and_says_what_is_wrong(change, words):
    old, new = change
    assert old in GOOD
    with pytest.raises(LessonError) as e:
        parse(GOOD.replace(old, new))
    message = str(e.value)
    assert message.startswith("lessons/99-exercise-format.md: steps[0] (Your turn).exercise")
    for word in words:
        assert word in message, message


def test_a_preset_link_names_the_presets_requests():
    block = GOOD.replace("preset=lesson", "preset=burst").replace("request.a.status", "request.7.status")
    assert parse(block).steps[0].exercise.link.preset == "burst"
    with pytest.raises(LessonError, match="'8'"):
        parse(block.replace("request.7.status", "request.8.status"))  # burst has requests 0 to 7


def test_the_check_says_when_the_playground_runs_another_workload(tiny):
    lesson, index = next((lesson, i) for lesson, i in EXERCISES if not lesson.steps[i].exercise.link.lesson_workload)
    exercise = lesson.steps[index].exercise
    other = next(p for p in ("burst", "spread") if p != exercise.link.preset)
    result = check_exercise(exercise, Lab(default_config(), tiny, other), lesson)
    assert not result.solved and len(result.checks) == 1
    assert f"your Playground runs the {other} preset" in result.checks[0].error


def test_an_unknown_reference_says_what_a_reference_is():
    refs = [("x", "<lesson id>.<step number>"), ("nope.1", "No lesson"), (f"{COURSE[0].id}.0", "steps 1 to")]
    for ref, words in refs:
        with pytest.raises(ValueError, match=words):
            find_exercise(COURSE, ref)


def test_the_guides_example_block_loads():
    guide = (Path(__file__).parents[2] / "lessons" / "README.md").read_text()
    example = next(part for part in guide.split("````markdown\n")[1:] if part.startswith("```exercise"))
    block = example.split("```exercise\n", 1)[1].split("\n```", 1)[0]
    exercise = parse(block).steps[0].exercise
    assert exercise.link.preset == exercise.solution.preset == "storm" and len(exercise.solved) == 3
