"""Does every step of the course fit one projector screen? Walks each lesson in the projector view
(``?presenter=1``) in headless Chromium, one browser session per lesson pressing Next, and measures every
step at every size (the viewport is resized in place: no rerun) — a step with a prediction twice, with
its question open and after "Just show me". Reports how far each view scrolls and which metric labels
are cut off:

    python bench/projector_fit.py [--lesson ID] [--sizes 1920x1080,1280x720] [--save]

``measure(page)`` and ``walk_lesson(...)`` are what tests/e2e/test_projector_browser.py asserts on.
Needs Playwright (pip) and Debian's Chromium at /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT))
from conftest import CHROMIUM, CHROMIUM_FLAGS, serve_app  # noqa: E402

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


def main() -> None:
    from playwright.sync_api import sync_playwright

    from pykv.lessons import load_course

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", help="one lesson id (default: the whole course)")
    parser.add_argument("--sizes", default=",".join(f"{w}x{h}" for w, h in SIZES))
    parser.add_argument("--save", action="store_true", help="write bench/results/<date>-cpu-projector-fit.txt")
    args = parser.parse_args()
    lessons = [lesson for lesson in load_course() if args.lesson in (None, lesson.id)]
    sizes = [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")]
    found, started = [], time.monotonic()
    with serve_app("tiny") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        for lesson in lessons:
            context = browser.new_context()
            found += walk_lesson(context.new_page(), url, lesson, sizes)
            context.close()
        browser.close()
    bad = misfits(found)
    report = [f"# python bench/projector_fit.py --sizes {args.sizes}" + (f" --lesson {args.lesson}" if args.lesson
                                                                          else ""),
              f"{len(found) - len(bad)} of {len(found)} step views fit one screen without cut metric labels "
              f"({time.monotonic() - started:.0f} s)", *bad]
    print("\n".join(report))
    if args.save:
        out = ROOT / "bench" / "results" / f"{time.strftime('%Y-%m-%d')}-cpu-projector-fit.txt"
        out.write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
