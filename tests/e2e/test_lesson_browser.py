"""A whole lesson in a real browser (Chromium + Playwright against `streamlit run` on the shipped
model, which the lessons are written for): open it from the course list, step through every step
with the keyboard and the Next button, check the URL, the checks and Back, and save a screenshot of
the last step under artifacts/."""

from __future__ import annotations

import re

import pytest

from testkit.page_wait import wait_settled
from testkit.projector import chip_overflows

VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def course():
    from pykv.ui.session.course_files import course

    lessons, problems = course()
    if not lessons:
        pytest.skip("no lesson files in lessons/")
    assert not problems, problems
    return lessons


def wait_idle(page) -> None:
    """Until the script runs are over (a key pressed during a run can be lost)."""
    wait_settled(page, timeout_ms=TIMEOUT_MS)  # the run over and the layout still: no fixed sleep


def step_text(k: int, n: int) -> re.Pattern:
    return re.compile(rf"step {k} of {n}$")


def wait_for_step(page, k: int, n: int, timeout: int = TIMEOUT_MS) -> None:
    page.get_by_text(step_text(k, n)).first.wait_for(timeout=timeout)


def move(page, k: int, n: int, key: str | None = None) -> None:
    """Go to step k with a key press (or the Next button); a key pressed while the page is busy can be
    dropped, so press again only if the page still shows the old step after a while."""
    for _ in range(3):
        wait_idle(page)
        if key:
            page.locator("body").press(key)
        else:
            page.locator("button").filter(has_text="Next").first.click()
        try:
            wait_for_step(page, k, n, timeout=15_000)
            return
        except Exception:
            if page.get_by_text(re.compile(r"step \d+ of \d+$")).first.inner_text().startswith(f"step {k} "):
                return
    wait_for_step(page, k, n)


def test_step_through_a_whole_lesson(browser, tiny_app_url, artifacts, course):
    lesson = course[0]
    n = len(lesson.steps)
    context = browser.new_context(viewport=VIEWPORT, color_scheme="light", device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(f"{tiny_app_url}/lessons")
        page.get_by_text(lesson.title).first.wait_for()
        page.locator(f".st-key-open_{lesson.id} button").click()
        wait_for_step(page, 1, n)
        page.locator(".js-plotly-plot").filter(has_text="Device KV pool").first.wait_for()
        for k in range(2, n + 1):
            move(page, k, n, key="ArrowRight" if k % 2 == 0 else None)  # keyboard and button, alternately
            page.get_by_role("heading", name=lesson.steps[k - 1].title).first.wait_for()
            assert re.search(rf"[?&]step={k}\b", page.url) and f"lesson={lesson.id}" in page.url
            assert not page.get_by_test_id("stException").count()
            assert not page.get_by_text("✗").count(), f"a failed check at step {k}"
        if n > 1:  # Back shows the earlier step, then forward again
            move(page, n - 1, n, key="ArrowLeft")
            move(page, n, n, key="ArrowRight")
        page.get_by_text("End of the lesson").first.wait_for()
        wait_idle(page)
        page.screenshot(path=str(artifacts / f"lesson-{lesson.id}-last-step.png"))
        assert not page.get_by_test_id("stException").count()
    finally:
        context.close()


# The text column's identifiers (a value path, a metric's name: letters, digits and . : _, holding a : or an _) and
# where each is drawn: "broken" where one of its lines ends after a character other than : _ or .
IDENTIFIERS_JS = """() => {
  const column = document.querySelector('[data-testid="stColumn"]');
  const chars = [];
  const texts = document.createTreeWalker(column, NodeFilter.SHOW_TEXT);
  let parent = null;
  for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    if (!node.parentElement.checkVisibility()) continue;
    if (node.parentElement !== parent) chars.push({ch: ' ', top: null});  // <wbr> splits a name, an element not
    parent = node.parentElement;
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const box = [...range.getClientRects()].find(r => r.width > 0);
      chars.push({ch: node.data[i], top: box ? Math.round(box.top) : null});
    }
  }
  const text = chars.map(c => c.ch).join(''), found = [], broken = [];
  for (const m of text.matchAll(/[A-Za-z][A-Za-z0-9_.:]*[_:][A-Za-z0-9_.:]*[A-Za-z0-9]/g)) {
    found.push(m[0]);
    for (let k = m.index; k < m.index + m[0].length - 1; k++) {
      const here = chars[k].top, next = chars[k + 1].top;
      if (here !== null && next !== null && next > here + 2 && !':_.'.includes(chars[k].ch)) {
        broken.push(`${m[0].slice(0, k + 1 - m.index)} / ${m[0].slice(k + 1 - m.index)}`);
      }
    }
  }
  return {width: column.getBoundingClientRect().width, found, broken};
}"""
# Steps whose narration and checks name long identifiers ("metric.pykv:num_preemptions_total")
IDENTIFIER_STEPS = (("what-triggers-preemption", 2), ("reference-counts", 4), ("the-recompute-tax", 4))


def test_a_learners_1280_px_column_breaks_identifiers_only_after_a_separator(browser, tiny_app_url, course):
    """The lesson column is ~230 px wide on a 1280 px laptop: check lines read "pykv:num_preemption / s_total"."""
    steps = {lesson.id: len(lesson.steps) for lesson in course}
    wanted = [(lesson_id, k) for lesson_id, k in IDENTIFIER_STEPS if lesson_id in steps]
    if not wanted:
        pytest.skip("none of the steps is in the course")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page, broken = context.new_page(), []
        for lesson_id, k in wanted:
            page.goto(f"{tiny_app_url}/lessons?lesson={lesson_id}&step={k}")
            wait_for_step(page, k, steps[lesson_id])
            wait_idle(page)
            found = page.evaluate(IDENTIFIERS_JS)
            assert found["width"] < 300 and any(len(name) > 20 for name in found["found"]), found  # a test of a case
            broken += [f"{lesson_id} step {k}: {name}" for name in found["broken"]]
        assert not broken, broken
    finally:
        context.close()


def test_a_learners_queue_chips_hold_their_ids_at_1280_px(browser, tiny_app_url, course):
    """The queue chart is ~200 px wide on a 1280 px laptop, where a chip was an 8 px sliver its id spilled out of."""
    steps = {lesson.id: len(lesson.steps) for lesson in course}
    lesson_id, k = IDENTIFIER_STEPS[0]  # three requests running
    if lesson_id not in steps:
        pytest.skip(f"lesson {lesson_id} is not in the course")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(f"{tiny_app_url}/lessons?lesson={lesson_id}&step={k}")
        wait_for_step(page, k, steps[lesson_id])
        wait_idle(page)
        page.locator(".st-key-lesson_queues .main-svg text").first.wait_for(state="attached", timeout=TIMEOUT_MS)
        assert not chip_overflows(page, "st-key-lesson_queues")
    finally:
        context.close()
