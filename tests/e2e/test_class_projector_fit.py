"""A class's projector (``?class=CODE&presenter=1``) fits one 1920×1080 and one 1280×720 screen, with no metric
label cut, no text hidden in a scrolling box and no text under the back row's floor, at every step of the lesson
whose prediction once pushed it 175 px past 720p after the instructor's Reveal (the room's answers beside the
narration; the same step fitted the solo projector): the question, then the revealed answer."""

from __future__ import annotations

import pytest

from testkit.projector import misfits, walk_class_lesson

LESSON_ID = "recompute-is-a-rollback"


@pytest.fixture(scope="module")
def lesson():
    from pykv.lessons.course.loader import read_course

    found = [lesson for lesson in read_course()[0] if lesson.id == LESSON_ID]
    if not found:
        pytest.skip(f"lesson {LESSON_ID} is not in the course")
    return found[0]


@pytest.mark.slow  # walks every step of a class lesson, twice
def test_the_class_projector_fits_both_screens_before_and_after_the_reveal(browser, tiny_class_probe_url, lesson):
    found = walk_class_lesson(browser, tiny_class_probe_url, lesson)
    assert any("(revealed)" in where for where, _ in found)  # the lesson asks a question: the reveal was measured
    assert not misfits(found), misfits(found)
