"""Every step of every lesson in the projector view, in a real browser on the shipped model, fits one 1920×1080
and one 1280×720 screen with no metric label cut off, no text hidden in a scrolling box (a room cannot scroll it)
and no text under the back row's floor (18 px at 1080p, 14 at 720p; the charts' own text: test_projector_type.py),
and no speaker notes are on it, measured on the layout probe (charts as empty boxes of their heights;
tests/e2e/test_layout_probe.py): part 3 of testkit.projector.PARTS (every
PARTS-th lesson from the 3rd), so that --dist loadfile walks the parts on both cores at once."""

from __future__ import annotations

import pytest

from testkit.projector import check_lesson_fits, course_part

LESSONS = course_part(3)


@pytest.mark.slow  # walks every step of its lessons in a browser
@pytest.mark.parametrize("lesson", LESSONS or [None], ids=[lesson.id for lesson in LESSONS] or ["no-lessons"])
def test_every_step_of_the_lesson_fits_both_projector_screens(fit_page, tiny_probe_url, lesson):
    if lesson is None:
        pytest.skip("no lesson of the course falls in this part")
    check_lesson_fits(fit_page, tiny_probe_url, lesson)
