"""The course in front of a room, in a real browser on the shipped model: every step of every lesson, in
the projector view, fits one 1920×1080 and one 1280×720 screen with no metric label cut off (a step with a
prediction with its question open and answered, and the step where the workshop path ends the lesson),
and no speaker notes are on it; the speaker view (a second window with the class key) shows the notes and
follows the projector; the cheat sheet renders and prints to one page. bench/projector_fit.py runs the
same walk and writes the report."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from pykv.lessons.loader import read_course  # noqa: E402
from testkit.projector import measure, misfits, wait_rendered, walk_lesson  # noqa: E402

SCREEN = {"width": 1920, "height": 1080}
COURSE = {lesson.id: lesson for lesson in read_course()[0]}


@pytest.fixture(scope="module")
def course():
    if not COURSE:
        pytest.skip("no lesson files in lessons/")
    return COURSE


@pytest.mark.parametrize("lesson_id", list(COURSE))
def test_every_step_of_the_lesson_fits_both_projector_screens(browser, tiny_app_url, lesson_id):
    lesson = COURSE[lesson_id]
    context = browser.new_context(viewport=SCREEN)
    try:
        page = context.new_page()
        found = walk_lesson(page, tiny_app_url, lesson)
        assert not misfits(found), misfits(found)
        assert page.get_by_text("Speaker notes").count() == 0
        last_core = lesson.steps[max(i for i, step in enumerate(lesson.steps) if not step.optional)]
        notes = last_core.notes  # the walk ends on the workshop path's last step: none of its notes are on screen
        if notes:
            assert page.get_by_text(notes.splitlines()[0][:40]).count() == 0
    finally:
        context.close()


def test_the_keyless_projector_follows_the_speaker_view(browser, tiny_app_url, course):
    lesson = next(lesson for lesson in course.values() if len(lesson.steps) >= 3 and lesson.steps[1].notes)
    n, notes = len(lesson.steps), lesson.steps[1].notes.splitlines()[0][:40]
    contexts = [browser.new_context(viewport=SCREEN) for _ in range(3)]
    try:
        teacher, projector, speaker = (context.new_page() for context in contexts)
        for page in (teacher, projector, speaker):
            page.set_default_timeout(60_000)
        teacher.goto(f"{tiny_app_url}/lessons?lesson={lesson.id}&step=1")
        wait_rendered(teacher)
        teacher.locator("button").filter(has_text="Start a class").first.click()
        teacher.get_by_text(re.compile(r"^Class code")).first.wait_for()
        query = parse_qs(urlparse(teacher.url).query)
        code, key = query["class"][0], query["key"][0]
        projector.goto(f"{tiny_app_url}/lessons?class={code}&presenter=1")  # the Projector link: no key
        projector.get_by_text(re.compile(rf"step 1 of {n}$")).first.wait_for()
        speaker.goto(f"{tiny_app_url}/lessons?lesson={lesson.id}&step=1&class={code}&key={key}&speaker=1")
        speaker.get_by_text(re.compile(rf"step 1 of {n}$")).first.wait_for()
        wait_rendered(speaker)
        speaker.locator("button").filter(has_text="Next").first.click()  # the speaker view drives ...
        projector.get_by_text(re.compile(rf"step 2 of {n}$")).first.wait_for(timeout=15_000)  # ... the room follows
        teacher.get_by_text(re.compile(rf"step 2 of {n}$")).first.wait_for(timeout=15_000)  # ... and so does this
        speaker.get_by_text("Speaker notes").first.wait_for()
        assert speaker.get_by_text(notes).count() >= 1
        wait_rendered(projector)
        assert "key" not in projector.url and projector.get_by_text(notes).count() == 0
        fit = measure(projector)
        assert fit["overflow"] == 0 and not fit["cut"], fit
    finally:
        for context in contexts:
            context.close()


def test_the_cheat_sheet_renders_and_prints_on_one_page(browser, tmp_path, course):
    from pykv.cheatsheet import cheatsheet_html

    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_content(cheatsheet_html(list(course.values())))
        assert page.locator("table").count() >= 2
        pdf = tmp_path / "cheatsheet.pdf"
        page.pdf(path=str(pdf), format="A4")
        assert len(re.findall(rb"/Type\s*/Page[^s]", pdf.read_bytes())) == 1  # one page object: one sheet
    finally:
        context.close()
