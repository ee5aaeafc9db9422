"""Class mode in real browsers: one instructor page and two learner pages, each in its own browser
context (separate sessions, as three laptops), against one `streamlit run` on the shipped model.
The instructor starts a class; the learners follow the instructor's Next within a few seconds; one
explores on their own in the Playground and comes back to the class's current step; ending the class
tells the learners. The class's QR code, read by a decoder off screenshots of the instructor's panel and
of the projector, is the class link, large enough for the back row."""

from __future__ import annotations

import io
import re
import time
from urllib.parse import parse_qs, urlparse

import pytest
import zxingcpp
from PIL import Image

from testkit.page_wait import wait_settled
from testkit.projector import measure

VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 60_000
FOLLOW_MS = 15_000  # goal: 2 s (a long poll answered, one rerun); a busy CI machine gets slack, the time is printed


@pytest.fixture(scope="module")
def lesson():
    from pykv.ui.session.course_files import course

    lessons, _ = course()
    if not lessons:
        pytest.skip("no lesson files in lessons/")
    return next(lesson for lesson in lessons if len(lesson.steps) >= 3)


def open_page(browser, url: str, traffic: list[str] | None = None):
    """``traffic``: gets "rerun" for every message the page sends on Streamlit's websocket and "poll" for every
    request of its long poll."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    if traffic is not None:
        page.on("websocket", lambda ws: ws.on("framesent", lambda _frame: traffic.append("rerun")))
        page.on("request", lambda request: traffic.append("poll") if "/api/pykv/follow" in request.url else None)
    page.goto(url)
    return context, page


def wait_idle(page) -> None:
    wait_settled(page, timeout_ms=TIMEOUT_MS)  # the run over and the layout still: no fixed sleep


def wait_for_step(page, k: int, n: int, timeout: int = TIMEOUT_MS) -> None:
    page.get_by_text(re.compile(rf"step {k} of {n}$")).first.wait_for(timeout=timeout)


def click(page, label: str) -> None:
    wait_idle(page)
    page.locator("button").filter(has_text=label).first.click()


@pytest.mark.slow  # a class with three browser sessions
def test_learners_follow_explore_rejoin_and_the_class_ends(browser, tiny_class_app_url, lesson):
    n = len(lesson.steps)
    contexts = []
    try:
        context, teacher = open_page(browser, f"{tiny_class_app_url}/lessons?lesson={lesson.id}&step=1")
        contexts.append(context)
        wait_for_step(teacher, 1, n)
        click(teacher, "Start a class")
        teacher.get_by_text(re.compile(r"^Class code")).first.wait_for()
        query = parse_qs(urlparse(teacher.url).query)
        code, key = query["class"][0], query["key"][0]
        assert re.fullmatch(r"[A-Z2-9]{6}", code) and key

        learners, traffic = [], []
        for i in range(2):
            context, page = open_page(browser, f"{tiny_class_app_url}/lessons?class={code}", traffic if i else None)
            contexts.append(context)
            wait_for_step(page, 1, n)
            assert "key=" not in page.url
            learners.append(page)
        assert not learners[0].locator("button").filter(has_text="Next").count()  # a learner cannot drive

        click(teacher, "Next")
        start = time.monotonic()
        for page in learners:
            wait_for_step(page, 2, n, timeout=FOLLOW_MS)
        print(f"both learners showed step 2 {time.monotonic() - start:.2f} s after the instructor's Next")
        for page in (teacher, learners[0]):  # on a 1280 px laptop the metrics wrap rather than break their words
            page.set_viewport_size({"width": 1280, "height": 800})
            wait_idle(page)
            assert not measure(page)["broken"], measure(page)["broken"]
            page.set_viewport_size(VIEWPORT)
        wait_idle(learners[1])
        traffic.clear()
        learners[1].wait_for_timeout(3_000)  # a class standing still: the page waits on its one held poll
        assert traffic.count("rerun") == 0 and traffic.count("poll") <= 1, traffic
        teacher.locator(".st-key-class_panel").filter(has_text=re.compile(r"2\s*connected")).wait_for(
            timeout=FOLLOW_MS
        )  # the instructor's counts (refreshed every few seconds)

        explorer = learners[1]
        click(explorer, "Explore on my own")
        explorer.get_by_text(re.compile("exploring on your own")).first.wait_for()
        explorer.get_by_text(re.compile(r"^Step \d+")).first.wait_for()  # the Playground's controls, its own engine
        click(explorer, "Step")
        click(teacher, "Next")  # the class moves on while they explore
        wait_for_step(learners[0], 3, n, timeout=FOLLOW_MS)
        click(explorer, "Back to the class")
        wait_for_step(explorer, 3, n)  # back at the instructor's current step

        click(teacher, "End class")
        for page in learners:
            page.get_by_text(re.compile(rf"Class {code} has ended")).first.wait_for(timeout=FOLLOW_MS)
    finally:
        for context in contexts:
            context.close()


def qr_codes(png: bytes) -> list:
    """The QR codes a decoder reads off a screenshot (each with its text and its corners in the image)."""
    return [code for code in zxingcpp.read_barcodes(Image.open(io.BytesIO(png))) if code.format.name == "QRCode"]


def test_the_class_qr_code_scans_to_the_class_link_in_the_panel_and_from_the_projectors_back_row(
    browser, tiny_class_app_url, lesson
):
    n = len(lesson.steps)
    contexts = []
    try:
        context, teacher = open_page(browser, f"{tiny_class_app_url}/lessons?lesson={lesson.id}&step=1")
        contexts.append(context)
        wait_for_step(teacher, 1, n)
        click(teacher, "Start a class")
        teacher.get_by_text(re.compile(r"^Class code")).first.wait_for()
        code = parse_qs(urlparse(teacher.url).query)["class"][0]
        link = f"{tiny_class_app_url}/lessons?class={code}"  # the address this browser used, as the panel says
        wait_idle(teacher)
        assert [c.text for c in qr_codes(teacher.locator(".st-key-class_panel").screenshot())] == [link]

        context, projector = open_page(browser, f"{tiny_class_app_url}/lessons?class={code}&presenter=1")
        contexts.append(context)
        for width, height, share in ((1920, 1080, 0.25), (1280, 720, 0.2)):
            projector.set_viewport_size({"width": width, "height": height})
            wait_for_step(projector, 1, n)
            wait_idle(projector)
            (found,) = qr_codes(projector.screenshot())
            corners = found.position
            side = corners.bottom_left.y - corners.top_left.y  # the code itself, without its white margin
            print(f"{width}x{height}: the projector's QR code is {side} px, {side / height:.0%} of the screen")
            assert found.text == link and side >= share * height, (found.text, side)
            assert measure(projector)["overflow"] == 0  # and the step still fits the screen
    finally:
        for context in contexts:
            context.close()
