"""Measuring a lesson step in the projector view (``?presenter=1``) in headless Chromium: how far the page
scrolls at each projector size, which metric labels are cut, which boxes hide text below their fold (the room
cannot scroll them) and which texts are smaller than the back row reads (``FLOOR_PX``).
tests/e2e/test_projector_fit_*.py assert on it
(the course dealt into PARTS files, so that pytest-xdist's --dist loadfile walks them on both cores at once);
bench/projector_fit.py reports it for the whole course."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from testkit.page_wait import next_frame, wait_settled

SIZES = ((1920, 1080), (1280, 720))
# The smallest type the back row of a room reads, in CSS px of the computed font size: 18 on a 1080p projector, 14 on a
# 720p one (PRESENTER_CSS's breakpoints: a screen at least 1800x1000 is drawn as 1080p).
FLOOR_PX = {"1080p": 18, "720p": 14}


def floor_px(width: int, height: int) -> int:
    return FLOOR_PX["1080p" if width >= 1800 and height >= 1000 else "720p"]


# Every visible text node's size: its element's computed font size, times the scale an SVG transform draws it at
# (plotly shrinks a bar's text that does not fit with one). Not a layout probe's chart box (its caption stands in for
# a chart: tests/e2e/test_projector_type.py measures the real charts' text) nor what no one sees (a closed expander,
# the 1080p chart at 720p, plotly's off-screen text measurer, a link clipped to 1 px until it has the focus).
SMALL_TEXT_JS = """(floor) => {
  const small = new Map();
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    const el = node.parentElement, text = node.textContent.trim();
    if (!text || !el || el.closest('style, script, [data-probe="chart"], .js-plotly-tester')) continue;
    if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
    const box = el.getBoundingClientRect();  // a "Skip to main content" link: clipped to 1 px until focused
    if (box.width <= 1 || box.height <= 1) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGGraphicsElement) { const m = el.getScreenCTM(); px *= Math.hypot(m.c, m.d); }
    px = Math.round(px * 10) / 10;
    if (px < floor) small.set(`${text.slice(0, 30)} (${px} px)`, true);
  }
  return [...small.keys()];
}"""
MEASURE_JS = """(floor) => {
  const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
  const overflow = Math.max(main.scrollHeight - main.clientHeight,
                            document.scrollingElement.scrollHeight - window.innerHeight, 0);
  const cut = [...document.querySelectorAll('[data-testid="stMetricLabel"] *')]
      .filter(e => e.children.length === 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim());
  // a box that scrolls its text (st.container(height=...)): the room cannot scroll it, so what is below is lost
  // (not a screen reader's 1 px copy of a radio's input: it is clipped on purpose)
  const hidden = [...main.querySelectorAll('*')].filter(e => e.clientHeight > 2 && ['auto', 'scroll', 'hidden']
      .includes(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight + 1)
      .map(e => `${[...e.classList].find(c => c.startsWith('st-key-')) || e.dataset.testid || e.tagName}: `
                + `${e.scrollHeight - e.clientHeight} px`);
  // a metric label's word split over two lines ("Preempti / ons"): its share of the row was narrower than the word
  // (a line may end after a hyphen: "H100-" / "SXM" is how text wraps)
  const broken = [];
  for (const label of document.querySelectorAll('[data-testid="stMetricLabel"]')) {
    const texts = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    for (let node = texts.nextNode(); node; node = texts.nextNode()) {
      for (const word of node.textContent.matchAll(/[^\\s-]+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(word[0]);
      }
    }
  }
  return {overflow, cut, hidden, broken, small: (SMALL_TEXT)(floor)};
}""".replace("SMALL_TEXT", SMALL_TEXT_JS)


# Each queue chip's id (in the visible chart of an element whose st-key holds ``key``) against the chip drawn behind
# it: how much wider (px) the id and 2 px either side of it are than its chip. null: no such chart on screen
CHIPS_JS = """(key) => {
  const chart = [...document.querySelectorAll(`[class*="${key}"] [data-testid="stPlotlyChart"]`)]
      .find(c => c.checkVisibility());
  if (!chart) return null;
  const shapes = [...chart.querySelectorAll('.shapelayer path')].map(p => p.getBoundingClientRect());
  return [...chart.querySelectorAll('.scatterlayer .textpoint text')].map(t => {
    const r = t.getBoundingClientRect(), x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    // the chip: the smallest shape under the id's centre (a lane's band is under it too)
    const chip = shapes.filter(c => c.left <= x && x <= c.right && c.top <= y && y <= c.bottom)
        .sort((a, b) => a.width - b.width)[0];
    return {text: t.textContent, over: chip ? Math.max(0, r.width + 4 - chip.width) : null};
  }).filter(c => c.over !== null);
}"""


def chip_overflows(page, key: str, required: bool = True) -> list[str]:
    """The queue chips (of the visible queue chart keyed ``key``) too narrow to hold their id with 2 px either side:
    "chip b 3 px too narrow" (a learner's at 1280 px were 8 px slivers its letters spilled out of). ``required``:
    AssertionError when no chip was measured."""
    chips = page.evaluate(CHIPS_JS, key) or []
    if required and not chips:
        raise AssertionError(f"no queue chip on screen in a chart keyed {key}")
    return [f"chip {c['text']} {c['over']:.0f} px too narrow" for c in chips if c["over"]]


def measure(page) -> dict:
    """{"overflow": pixels the page scrolls past the viewport, "cut": metric labels cut off, "hidden": boxes whose
    text scrolls out of sight, "broken": words of metric labels split over two lines, "small": texts under the
    floor of the viewport's size (``floor_px``), each with its size}."""
    size = page.viewport_size
    return page.evaluate(MEASURE_JS, floor_px(size["width"], size["height"]))


def wait_rendered(page) -> None:
    """Until the script run is over and the layout holds still (no fixed sleep)."""
    wait_settled(page, timeout_ms=120_000)


NO_ANIMATION_JS = "() => document.getAnimations().every(a => a.playState !== 'running')"


def _measure_settled(page) -> dict:
    """The measure once no animation runs (an expander closing clips its text until it is done: a busy CI machine
    measured one mid-way) and two measures in a row, a frame apart, agree (a resize is laid out within a frame)."""
    page.wait_for_function(NO_ANIMATION_JS, polling=50, timeout=30_000)
    last = None
    for _ in range(20):
        next_frame(page)
        now = measure(page)
        if now == last:
            return now
        last = now
    return last


def _measure_sizes(page, sizes, where: str) -> list[tuple[str, dict]]:
    """The view as it is, measured at each size (resized in place)."""
    found = []
    for width, height in sizes:
        page.set_viewport_size({"width": width, "height": height})
        found.append((f"{width}x{height} {where}", _measure_settled(page)))  # heights follow CSS at once
    return found


def _measure_step(page, sizes, where: str) -> list[tuple[str, dict]]:
    """The step on screen (rendered), with its question open and then answered if it asks one."""
    wait_rendered(page)
    found = []
    show = page.get_by_role("button", name="Just show me")
    if show.count():
        found += _measure_sizes(page, sizes, f"{where} (question)")
        show.first.click()
        show.first.wait_for(state="detached", timeout=120_000)  # the answer's run has replaced the question
        wait_rendered(page)
    return found + _measure_sizes(page, sizes, where)


def walk_lesson(page, url: str, lesson, sizes=SIZES) -> list[tuple[str, dict]]:
    """[(where, measure)] for every step of the lesson in the projector view, walked with Next in one
    session (a step with an open prediction measured with the question, then with the answer), and the
    workshop path's last step, where the lesson ends (its takeaway) when optional steps follow it."""
    n_steps, first = len(lesson.steps), {"width": sizes[0][0], "height": sizes[0][1]}
    page.set_viewport_size(first)
    page.goto(f"{url}/lessons?lesson={lesson.id}&step=1&presenter=1")
    found = []
    for k in range(1, n_steps + 1):
        page.get_by_text(f"step {k} of {n_steps}", exact=False).first.wait_for(timeout=120_000)
        found += _measure_step(page, sizes, f"{lesson.id} step {k}")
        if k < n_steps:
            page.set_viewport_size(first)
            page.locator(".st-key-lesson_next button").first.click()
    core_end = max(i for i, step in enumerate(lesson.steps, 1) if not step.optional)
    if core_end < n_steps:
        page.set_viewport_size(first)
        page.goto(f"{url}/lessons?lesson={lesson.id}&step={core_end}&presenter=1&path=core")
        page.get_by_text(f"step {core_end} of {n_steps}", exact=False).first.wait_for(timeout=120_000)
        found += _measure_step(page, sizes, f"{lesson.id} step {core_end} (end of the workshop path)")
    return found


def walk_class_lesson(browser, url: str, lesson, sizes=SIZES) -> list[tuple[str, dict]]:
    """[(where, measure)] for every step of ``lesson`` on a class's projector (``?class=CODE&presenter=1``), the
    instructor driving it from a page of their own: a step with a prediction measured with the question, then
    after the instructor's Reveal (the room's answers beside the narration)."""
    n_steps, first = len(lesson.steps), {"width": sizes[0][0], "height": sizes[0][1]}
    teacher_context = browser.new_context(viewport={"width": 1440, "height": 900})
    projector_context = browser.new_context(viewport=first)
    try:
        teacher, projector = teacher_context.new_page(), projector_context.new_page()
        teacher.goto(f"{url}/lessons?lesson={lesson.id}&step=1")
        teacher.get_by_text(f"step 1 of {n_steps}", exact=False).first.wait_for(timeout=120_000)
        wait_rendered(teacher)
        teacher.locator("button").filter(has_text="Start a class").first.click()
        teacher.get_by_text("Class code", exact=False).first.wait_for(timeout=120_000)
        code = parse_qs(urlparse(teacher.url).query)["class"][0]  # the instructor's address carries it
        projector.goto(f"{url}/lessons?class={code}&presenter=1")
        found = []
        for k in range(1, n_steps + 1):
            projector.set_viewport_size(first)
            projector.get_by_text(f"step {k} of {n_steps}", exact=False).first.wait_for(timeout=120_000)
            wait_rendered(projector)
            where = f"class {lesson.id} step {k}"
            if lesson.steps[k - 1].predict is not None:
                found += _measure_sizes(projector, sizes, f"{where} (question)")
                wait_rendered(teacher)
                teacher.locator(".st-key-class_reveal button").first.click()
                # the room's answers are drawn twice (720p, 1080p) and one is hidden: wait for them in the page
                projector.get_by_text("right answer", exact=False).first.wait_for(state="attached", timeout=120_000)
                projector.set_viewport_size(first)
                wait_rendered(projector)
                where += " (revealed)"
            found += _measure_sizes(projector, sizes, where)
            if k < n_steps:
                wait_rendered(teacher)
                teacher.locator(".st-key-lesson_next button").first.click()
        return found
    finally:
        projector_context.close()
        teacher_context.close()


def misfits(found: list[tuple[str, dict]]) -> list[str]:
    return [
        f"{where}: scrolls {m['overflow']} px"
        + (f", cut labels {m['cut']}" if m["cut"] else "")
        + (f", text hidden in {m['hidden']}" if m["hidden"] else "")
        + (f", label words broken {m['broken']}" if m["broken"] else "")
        + (f", text under the floor {m['small']}" if m["small"] else "")
        for where, m in found
        if m["overflow"] or m["cut"] or m["hidden"] or m["broken"] or m["small"]
    ]


PARTS = 3  # tests/e2e/test_projector_fit_1.py .. _3.py


def course_part(part: int) -> list:
    """The lessons one of the PARTS fit files walks: every PARTS-th lesson of the course, from ``part`` (1-based)."""
    from pykv.lessons.course.loader import read_course

    return read_course()[0][part - 1 :: PARTS]


def check_lesson_fits(page, url: str, lesson) -> None:
    """Every step of ``lesson`` in the projector view fits both SIZES with no metric label cut, no text hidden in
    a scrolling box and no text under the floor (``floor_px``) (a step with a prediction with its question open and
    answered, and the step where the workshop path ends the lesson), and no speaker notes are on it (the walk ends on
    the workshop path's last step: none of its notes are shown). ``page``: any page of the browser; the walk opens
    the lesson in it afresh (a new session)."""
    found = walk_lesson(page, url, lesson)
    bad = misfits(found)
    if bad:
        raise AssertionError(bad)
    if page.get_by_text("Speaker notes").count():
        raise AssertionError(f"{lesson.id}: speaker notes on the projector")
    last_core = lesson.steps[max(i for i, step in enumerate(lesson.steps) if not step.optional)]
    notes = last_core.notes
    if notes and page.get_by_text(notes.splitlines()[0][:40]).count():
        raise AssertionError(f"{lesson.id}: the last core step's notes are on the projector")
