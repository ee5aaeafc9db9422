"""Does every step of the course fit one projector screen? Opens each lesson step in the projector view
(``?presenter=1``) in headless Chromium at 1920×1080 and 1280×720 and reports, per step, how far the page
scrolls and which metric labels are cut off. Not a CI test (the whole course takes minutes):

    python bench/projector_fit.py [--lesson ID] [--sizes 1920x1080,1280x720] [--save]

``measure(page)`` is also what tests/e2e/test_projector_browser.py asserts on a few steps.
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


def main() -> None:
    from playwright.sync_api import sync_playwright

    from pykv.lessons import load_course

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", help="one lesson id (default: the whole course)")
    parser.add_argument("--sizes", default="1920x1080,1280x720")
    parser.add_argument("--save", action="store_true", help="write bench/results/<date>-cpu-projector-fit.txt")
    args = parser.parse_args()
    lessons = [lesson for lesson in load_course() if args.lesson in (None, lesson.id)]
    sizes = [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")]
    lines, fits, total = [], 0, 0
    with serve_app("tiny") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        for width, height in sizes:
            page = browser.new_context(viewport={"width": width, "height": height}).new_page()
            for lesson in lessons:
                for k in range(1, len(lesson.steps) + 1):
                    page.goto(f"{url}/lessons?lesson={lesson.id}&step={k}&presenter=1")
                    wait_rendered(page)
                    m = measure(page)
                    total += 1
                    fits += not m["overflow"] and not m["cut"]
                    if m["overflow"] or m["cut"]:
                        lines.append(f"{width}x{height} {lesson.id} step {k}: scrolls {m['overflow']} px"
                                     + (f", cut labels {m['cut']}" if m["cut"] else ""))
            page.context.close()
        browser.close()
    report = [f"# python bench/projector_fit.py --sizes {args.sizes}" + (f" --lesson {args.lesson}" if args.lesson
                                                                          else ""),
              f"{fits} of {total} step views fit one screen without cut metric labels", *lines]
    print("\n".join(report))
    if args.save:
        out = ROOT / "bench" / "results" / f"{time.strftime('%Y-%m-%d')}-cpu-projector-fit.txt"
        out.write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
