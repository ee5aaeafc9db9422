"""Measuring a lesson step in the projector view (``?presenter=1``) in headless Chromium: how far the page
scrolls at each projector size and which metric labels are cut. tests/e2e/test_projector_browser.py asserts on
it; bench/projector_fit.py reports it for the whole course."""

from __future__ import annotations

SIZES = ((1920, 1080), (1280, 720))
MEASURE_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
  const overflow = Math.max(main.scrollHeight - main.clientHeight,
                            document.scrollingElement.scrollHeight - window.innerHeight, 0);
  const cut = [...document.querySelectorAll('[data-testid="stMetricLabel"] *')]
      .filter(e => e.children.length === 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim());
  return {overflow, cut};
}"""


def measure(page) -> dict:
    """{"overflow": pixels the page scrolls past the viewport, "cut": metric labels cut off}."""
    return page.evaluate(MEASURE_JS)


def wait_rendered(page) -> None:
    for _ in range(2):
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
        page.wait_for_timeout(500)


def _measure_sizes(page, sizes, where: str) -> list[tuple[str, dict]]:
    """The view as it is, measured at each size (resized in place)."""
    found = []
    for width, height in sizes:
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(150)  # heights follow CSS at once; charts have fixed heights
        found.append((f"{width}x{height} {where}", measure(page)))
    return found


def _measure_step(page, sizes, where: str) -> list[tuple[str, dict]]:
    """The step on screen (rendered), with its question open and then answered if it asks one."""
    wait_rendered(page)
    found = []
    show = page.get_by_role("button", name="Just show me")
    if show.count():
        found += _measure_sizes(page, sizes, f"{where} (question)")
        show.first.click()
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


def misfits(found: list[tuple[str, dict]]) -> list[str]:
    return [f"{where}: scrolls {m['overflow']} px" + (f", cut labels {m['cut']}" if m["cut"] else "")
            for where, m in found if m["overflow"] or m["cut"]]
