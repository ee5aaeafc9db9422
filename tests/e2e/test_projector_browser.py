"""The course in front of a room, in a real browser on the shipped model: the speaker view (a second window
with the class key) shows the notes and follows the projector; the cheat sheet renders and prints to one page.
That every step of every lesson fits the projector's screens: tests/e2e/test_projector_fit_*.py (the course in
testkit.projector.PARTS files, walked on both cores at once); bench/projector_fit.py runs the same walk and
writes the report."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from pykv.lessons.course.loader import read_course  # noqa: E402
from testkit.projector import measure, wait_rendered  # noqa: E402

SCREEN = {"width": 1920, "height": 1080}
COURSE = {lesson.id: lesson for lesson in read_course()[0]}


@pytest.fixture(scope="module")
def course():
    if not COURSE:
        pytest.skip("no lesson files in lessons/")
    return COURSE


@pytest.mark.slow  # a minute in CI
def test_the_keyless_projector_follows_the_speaker_view(browser, tiny_class_app_url, course):
    lesson = next(lesson for lesson in course.values() if len(lesson.steps) >= 3 and lesson.steps[1].notes)
    n, notes = len(lesson.steps), lesson.steps[1].notes.splitlines()[0][:40]
    contexts = [browser.new_context(viewport=SCREEN) for _ in range(3)]
    try:
        teacher, projector, speaker = (context.new_page() for context in contexts)
        for page in (teacher, projector, speaker):
            page.set_default_timeout(60_000)
        teacher.goto(f"{tiny_class_app_url}/lessons?lesson={lesson.id}&step=1")
        wait_rendered(teacher)
        teacher.locator("button").filter(has_text="Start a class").first.click()
        teacher.get_by_text(re.compile(r"^Class code")).first.wait_for()
        query = parse_qs(urlparse(teacher.url).query)
        code, key = query["class"][0], query["key"][0]
        projector.goto(f"{tiny_class_app_url}/lessons?class={code}&presenter=1")  # the Projector link: no key
        projector.get_by_text(re.compile(rf"step 1 of {n}$")).first.wait_for()
        speaker.goto(f"{tiny_class_app_url}/lessons?lesson={lesson.id}&step=1&class={code}&key={key}&speaker=1")
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
