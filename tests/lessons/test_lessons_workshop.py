"""Objectives, takeaways, time, {optional} steps and the workshop path; the claim / vLLM / pykv callout.
The format is checked when a file loads (one LessonError naming the field); the course itself has them
all, and its core steps add up to about 90 minutes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pykv.lessons import LessonError, load_lesson
from pykv.lessons.course.loader import read_course
from pykv.lessons.course.workshop import (
    course_minutes,
    lesson_minutes,
    on_workshop_path,
    path_named,
    step_after,
    step_before,
)
from pykv.lessons.format.differs import LABELS, callout_markdown
from pykv.ui.views.panels.lesson_guide import card_text

FRONT = """\
id: small
title: Small
summary: A small lesson.
objective: Say what a block is.
takeaway: A block holds the K/V of a few tokens.
minutes: 6
core_minutes: 4
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}
"""
DIFFERS = """\
```differs
claim: "Fragmentation runs the pool out."
vllm: Any free block will do.
pykv: The same paging.
versions: 0.6.3, 0.10.2, 0.33.0
```
"""


def body(*markers: str, extra: str = "") -> str:
    """Four steps; ``markers[i]`` is appended to the heading of step i."""
    steps = []
    for i, marker in enumerate(markers or ("", "", "", "")):
        steps.append(
            f"## Step {i + 1}{marker}\n\nNarration {i + 1}.\n\n```actions\n- step: 1\n```\n" + (extra if i == 1 else "")
        )
    return "\n".join(steps)


def write(tmp_path: Path, front: str = FRONT, text: str = "") -> Path:
    path = tmp_path / "01-small.md"
    path.write_text(f"---\n{textwrap.dedent(front)}---\n\n{text or body('', ' {optional}', '', ' {optional}')}")
    return path


def error(tmp_path: Path, front: str = FRONT, text: str = "") -> str:
    with pytest.raises(LessonError) as info:
        load_lesson(write(tmp_path, front, text))
    return str(info.value)


# ---- the format ---------------------------------------------------------------------------------


def test_the_fields_and_markers_load(tmp_path):
    lesson = load_lesson(write(tmp_path, text=body("", " {optional}", "", " {optional}", extra=DIFFERS)))
    assert (lesson.objective, lesson.takeaway, lesson.minutes, lesson.core_minutes) == (
        "Say what a block is.",
        "A block holds the K/V of a few tokens.",
        6,
        4,
    )
    assert [s.title for s in lesson.steps] == ["Step 1", "Step 2", "Step 3", "Step 4"]  # the marker is not the title
    assert [s.optional for s in lesson.steps] == [False, True, False, True]
    differs = lesson.steps[1].differs
    assert (differs.claim, differs.vllm, differs.pykv, differs.versions) == (
        "Fragmentation runs the pool out.",
        "Any free block will do.",
        "The same paging.",
        "0.6.3, 0.10.2, 0.33.0",
    )
    assert "```differs" not in lesson.steps[1].narration and lesson.steps[0].differs is None


def test_core_minutes_0_leaves_a_lesson_out_of_the_workshop_path(tmp_path):
    lesson = load_lesson(
        write(
            tmp_path,
            FRONT.replace("core_minutes: 4", "core_minutes: 0"),
            body("", " {optional}", " {optional}", " {optional}"),
        )
    )
    assert not on_workshop_path(lesson) and lesson_minutes(lesson, "core") == 0
    assert course_minutes([lesson], "core") == 0 and course_minutes([lesson], "full") == 6
    assert "full course only" in card_text(1, lesson, "core") and "full course only" not in card_text(1, lesson, "full")


def test_every_field_is_optional_for_a_lesson_outside_the_course(tmp_path):
    front = (
        "\n".join(
            line
            for line in FRONT.splitlines()
            if not line.startswith(("objective", "takeaway", "minutes", "core_minutes"))
        )
        + "\n"
    )
    lesson = load_lesson(write(tmp_path, front, body()))
    assert (lesson.objective, lesson.takeaway, lesson.minutes, lesson.core_minutes) == (None, None, None, None)
    assert lesson_minutes(lesson, "core") is None and course_minutes([lesson], "full") == 0


@pytest.mark.parametrize(
    "front_change, text, words",
    [
        (("core_minutes: 4", "core_minutes: 7"), "", ["core_minutes", "more than minutes"]),
        (("core_minutes: 4\n", ""), "", ["core_minutes", "missing", "{optional}"]),
        (("", ""), body(), ["core_minutes", "no step is marked {optional}"]),
        (("minutes: 6\n", ""), "", ["core_minutes", "needs minutes"]),
        (("minutes: 6", "minutes: 0"), "", ["minutes", "greater than or equal to 1"]),
        (("minutes: 6", "minutes: 6.5"), "", ["minutes", "integer"]),
        (("minutes: 6", "minutes: 999"), "", ["minutes", "less than or equal to 240"]),
        (("objective: Say what a block is.", "objective: ''"), "", ["objective", "at least 1 character"]),
        (("objective: Say what a block is.", 'objective: "One.\\nTwo."'), "", ["objective", "one line"]),
        (("takeaway: A block holds the K/V of a few tokens.", "takeaway: [a, b]"), "", ["takeaway", "valid string"]),
        (("", ""), body(" {optional}", "", "", ""), ["steps[0] (Step 1)", "first step cannot be {optional}"]),
        (("core_minutes: 4", "core_minutes: 0"), "", ["core_minutes", "leaves the lesson out", '"Step 3" is core']),
        (
            ("", ""),
            body("", " {optinal}", "", ""),
            ["steps[1] (Step 2)", "{optinal}", "the only step marker is {optional}"],
        ),
    ],
)
def test_malformed_timing_and_markers_name_the_field(tmp_path, front_change, text, words):
    old, new = front_change
    message = error(tmp_path, FRONT.replace(old, new) if old else FRONT, text)
    assert all(w in message for w in words), message


@pytest.mark.parametrize(
    "block, words",
    [
        ("```differs\nclaim: a\nvllm: b\n```\n", ["steps[1] (Step 2).differs.pykv", "missing"]),
        ("```differs\nclaim: a\nvllm: b\npykv: c\nsource: d\n```\n", ["differs.source", "unknown field"]),
        ("```differs\nclaim: 'n is {{ engine.step }}'\nvllm: b\npykv: c\n```\n", ["differs.claim", "template"]),
        ('```differs\nclaim: "one\\ntwo"\nvllm: b\npykv: c\n```\n', ["differs.claim", "one line"]),
        ("```differs\nclaim: " + "x" * 301 + "\nvllm: b\npykv: c\n```\n", ["differs.claim", "at most 300"]),
        ("```differs\n- claim: a\n```\n", ["differs", "a differs block is a mapping"]),
        (DIFFERS + DIFFERS, ["differs", "a second ```differs block"]),
    ],
)
def test_a_malformed_differs_block_names_the_field(tmp_path, block, words):
    message = error(tmp_path, text=body("", " {optional}", "", " {optional}", extra=block))
    assert all(w in message for w in words), message


def test_the_callout_is_three_rows_with_the_releases_in_the_vllm_label(tmp_path):
    lesson = load_lesson(write(tmp_path, text=body("", " {optional}", "", " {optional}", extra=DIFFERS)))
    differs = lesson.steps[1].differs
    rows = callout_markdown(differs).split("  \n")
    assert len(rows) == 3 and all(row.startswith("> ") for row in rows)
    assert [label in row for label, row in zip(LABELS, rows)] == [True, True, True]
    assert "**vLLM 0.6.3, 0.10.2, 0.33.0**" in rows[1] and rows[2].endswith("The same paging.")
    assert "versions" not in callout_markdown(differs.model_copy(update={"versions": None}))


# ---- the path -----------------------------------------------------------------------------------


def test_next_and_prev_skip_optional_steps_on_the_core_path_only(tmp_path):
    lesson = load_lesson(write(tmp_path, text=body("", " {optional}", "", " {optional}")))
    assert [i for i, step in enumerate(lesson.steps) if not step.optional] == [0, 2]
    assert [step_after(lesson, i, "full") for i in range(4)] == [1, 2, 3, None]
    assert [step_after(lesson, i, "core") for i in range(4)] == [2, 2, None, None]
    assert [step_before(lesson, i, "core") for i in range(4)] == [None, 0, 0, 2]
    assert [step_before(lesson, i, "full") for i in range(4)] == [None, 0, 1, 2]
    assert step_after(lesson, 2, "core") is None and step_after(lesson, 2, "full") == 3  # the end on each path
    assert (lesson_minutes(lesson, "core"), lesson_minutes(lesson, "full")) == (4, 6)


def test_a_path_in_the_url_is_core_full_or_an_error():
    assert (path_named(None), path_named(""), path_named("core"), path_named("full")) == (None, None, "core", "full")
    with pytest.raises(ValueError, match="path=core"):
        path_named("fast")


# ---- the course ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def course():
    return read_course()[0]  # the lessons that load (a lesson in the making is another test's failure)


def test_every_lesson_of_the_course_has_an_objective_a_takeaway_and_its_minutes(course):
    for lesson in course:
        assert lesson.objective and lesson.takeaway and lesson.minutes, (
            f"{lesson.path.name}: give it objective, takeaway and minutes (and core_minutes with {{optional}} steps): "
            "lessons/README.md, 'Objectives, time and the workshop path'"
        )
        core = lesson.core_minutes if lesson.core_minutes is not None else lesson.minutes
        assert 0 <= core <= lesson.minutes, lesson.id
        assert (core < lesson.minutes) == any(step.optional for step in lesson.steps), lesson.id


def test_the_workshop_path_fits_90_minutes(course):
    assert 80 <= course_minutes(course, "core") <= 90, course_minutes(course, "core")
    assert course_minutes(course, "full") > course_minutes(course, "core") + 60


def test_the_course_gives_its_divergences_a_callout(course):
    by_id = {lesson.id: lesson for lesson in course}
    callouts = {lesson.id: [step.title for step in lesson.steps if step.differs] for lesson in course}
    assert "The trigger: no block for the next token" in callouts["what-triggers-preemption"]
    assert "What vLLM actually does" in callouts["swap-versus-recompute"]
    assert any(
        "Fragment" in step.differs.claim or "fragment" in step.differs.claim
        for step in by_id["kv-cache-and-blocks"].steps
        if step.differs
    )
    chunked = [step.differs for step in by_id["chunked-prefill-is-no-checkpoint"].steps if step.differs]
    assert chunked and "lowers" in chunked[0].claim and "adds" in chunked[0].pykv
    assert sum(map(len, callouts.values())) >= 5
    for lesson in course:  # a callout sits on a core step: the workshop sees it
        assert all(not step.optional for step in lesson.steps if step.differs), lesson.id
