"""The projector's type with its real charts, in a real browser on the shipped model: the fit walks
(tests/e2e/test_projector_fit_*.py) check the floor on every step, but on the layout probe, whose charts are empty
boxes. Here a few steps that draw every kind of chart the projector shows (the pool, the queues with a badge, the
side runs, a token diff, a queue cut short with "+N more", the room's answers after a reveal) are drawn for real and
every visible text, plotly's SVG text included, is measured at both projector sizes against the floor
(testkit.projector.FLOOR_PX: 18 px at 1920x1080, 14 at 1280x720); the side runs' tick labels are whole numbers
that keep apart, and each queue chip holds its id (a learner's at 1280 px too)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from pykv.lessons.format.step_blocks import Tokenize
from testkit.page_wait import next_frame, wait_settled
from testkit.projector import SIZES, chip_overflows, measure

# Every chart on screen drawn: plotly has laid out its text (a chart of the other size is hidden, and not drawn)
CHARTS_DRAWN_JS = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(c => c.checkVisibility());
  return charts.length > 0 && charts.every(c => c.querySelector('.main-svg text'));
}"""
# The side runs' x tick labels on screen: text and box
TICKS_JS = """() => {
  const chart = [...document.querySelectorAll('[class*="st-key-projector_runs_"] [data-testid="stPlotlyChart"]')]
      .find(c => c.checkVisibility());
  return chart ? [...chart.querySelectorAll('.xtick text')].map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left, right: r.right, top: r.top};
  }) : null;
}"""


def _tokenize_step() -> tuple[str, int] | None:
    from pykv.lessons.course.loader import read_course

    for lesson in read_course()[0]:
        for k, step in enumerate(lesson.steps, 1):
            if any(isinstance(a, Tokenize) for a in step.actions):
                return lesson.id, k
    return None


# (lesson, step): the pool, queues with a badge (R1) and the side runs; a queue cut short ("+4 more"); a token diff
STEPS = [("recompute-is-a-rollback", 2), ("sizing-the-kv-cache", 6)] + [s for s in [_tokenize_step()] if s]


def _measured(page, where: str) -> list[str]:
    """What is wrong on the page at each projector size: texts under the floor, a page that scrolls."""
    bad = []
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        next_frame(page)
        wait_settled(page)
        page.wait_for_function(CHARTS_DRAWN_JS, polling=100, timeout=60_000)
        next_frame(page)
        found = measure(page)
        bad += [f"{where} {width}x{height}: {text}" for text in found["small"]]
        if found["overflow"]:
            bad.append(f"{where} {width}x{height}: scrolls {found['overflow']} px")
        chips = chip_overflows(page, "projector_queues_for", required=False)  # a token diff step folds the engine
        bad += [f"{where} {width}x{height}: {chip}" for chip in chips]
        ticks = page.evaluate(TICKS_JS)
        if ticks:
            bad += _tick_faults(ticks, f"{where} {width}x{height}")
    return bad


def _tick_faults(ticks: list[dict], where: str) -> list[str]:
    """Side-run ticks: plain numbers (no SI "500m", "1.2k"), the counts' whole, no two closer than 4 px."""
    faults = [f"{where}: tick {t['text']!r}" for t in ticks if not re.fullmatch(r"\d[\d,]*(\.\d+)?", t["text"])]
    row = sorted(ticks, key=lambda t: t["left"])
    faults += [
        f"{where}: ticks {a['text']!r} and {b['text']!r} {b['left'] - a['right']:.0f} px apart"
        for a, b in zip(row, row[1:])
        if abs(a["top"] - b["top"]) < 4 and b["left"] - a["right"] < 4
    ]
    return faults


@pytest.fixture(scope="module")
def course_steps():
    from pykv.lessons.course.loader import read_course

    ids = {lesson.id for lesson in read_course()[0]}
    steps = [(lesson_id, k) for lesson_id, k in STEPS if lesson_id in ids]
    if not steps:
        pytest.skip("none of the steps is in the course")
    return steps


@pytest.mark.slow  # three steps drawn for real at both sizes
def test_every_text_on_the_projector_reaches_the_back_row_with_real_charts(browser, tiny_app_url, course_steps):
    context = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    try:
        page = context.new_page()
        bad = []
        for lesson_id, step in course_steps:
            page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
            page.goto(f"{tiny_app_url}/lessons?lesson={lesson_id}&step={step}&presenter=1&path=core")
            page.get_by_text(f"step {step} of", exact=False).first.wait_for(timeout=120_000)
            bad += _measured(page, f"{lesson_id} step {step}")
        assert not bad, bad
    finally:
        context.close()


@pytest.mark.slow  # a class: the instructor, the projector and a learner
def test_the_class_projector_after_a_reveal_and_a_learners_chips(browser, tiny_class_app_url):
    from pykv.lessons.course.loader import read_course

    lesson = next((lesson for lesson in read_course()[0] if lesson.id == STEPS[0][0]), None)
    if lesson is None:
        pytest.skip(f"lesson {STEPS[0][0]} is not in the course")
    step = next(k for k, s in enumerate(lesson.steps, 1) if s.predict is not None)
    contexts = [browser.new_context(viewport=size) for size in ({"width": 1440, "height": 900},) * 3]
    try:
        teacher, projector, learner = (context.new_page() for context in contexts)
        teacher.goto(f"{tiny_class_app_url}/lessons?lesson={lesson.id}&step={step}")
        teacher.get_by_text(f"step {step} of", exact=False).first.wait_for(timeout=120_000)
        wait_settled(teacher)
        teacher.locator("button").filter(has_text="Start a class").first.click()
        teacher.get_by_text("Class code", exact=False).first.wait_for(timeout=120_000)
        code = parse_qs(urlparse(teacher.url).query)["class"][0]
        projector.goto(f"{tiny_class_app_url}/lessons?class={code}&presenter=1")
        learner.set_viewport_size({"width": 1280, "height": 800})
        learner.goto(f"{tiny_class_app_url}/lessons?class={code}")
        for page in (projector, learner):
            page.get_by_text(f"step {step} of", exact=False).first.wait_for(timeout=120_000)
        wait_settled(teacher)
        teacher.locator(".st-key-class_reveal button").first.click()
        projector.get_by_text("right answer", exact=False).first.wait_for(state="attached", timeout=120_000)
        bad = _measured(projector, f"class {lesson.id} step {step} (revealed)")
        wait_settled(learner)
        learner.wait_for_function(CHARTS_DRAWN_JS, polling=100, timeout=60_000)
        bad += [f"learner at 1280 px: {chip}" for chip in chip_overflows(learner, "follow_queues")]
        assert not bad, bad
    finally:
        for context in contexts:
            context.close()
