"""Every lesson of the course loads and replays to its end headless, on the shipped model, with every
``expect`` check passing and no action failing (issue 7)."""

from __future__ import annotations

import pytest

from pykv.lessons import load_course, load_lesson, replay
from pykv.lessons.course.loader import COURSE_DIR, lesson_files

FILES = lesson_files()


def _report(states) -> str:
    lines = []
    for s in states:
        for e in s.errors:
            lines.append(f"  step {s.index} ({s.step.title}): error: {e}")
        for c in s.failed_checks:
            detail = c.error or f"actual {c.actual!r}, expected {c.expected!r}"
            lines.append(f"  step {s.index} ({s.step.title}): {c.description}: {detail}")
    return "\n".join(lines)


def test_the_course_has_lessons():
    assert FILES, f"no lessons found in {COURSE_DIR} (expected files named NN-name.md)"


def test_the_course_loads_with_unique_ids():
    lessons = load_course()
    assert [lesson.path.name for lesson in lessons] == [f.name for f in FILES]


@pytest.mark.parametrize("path", FILES or [None], ids=[f.name for f in FILES] or ["no-lessons"])
def test_lesson_replays_with_every_check_passing(path, tiny):
    if path is None:
        pytest.fail(f"no lessons found in {COURSE_DIR}")
    lesson = load_lesson(path)
    states = replay(lesson, tiny)
    assert len(states) == len(lesson.steps)
    failures = _report(states)
    assert not failures, f"{path.name} failed:\n{failures}"
