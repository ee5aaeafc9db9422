"""Does every step of the course fit one projector screen? Walks each lesson in the projector view
(``?presenter=1``) in headless Chromium, one browser session per lesson pressing Next, and measures every
step at every size (the viewport is resized in place: no rerun) — a step with a prediction twice, with
its question open and after "Just show me". Reports how far each view scrolls, which metric labels are
cut off, which boxes hide text below their fold (a room cannot scroll them) and which texts are under the
back row's floor (``testkit.projector.FLOOR_PX``). It measures the app as
testkit/layout_probe_app.py serves it, each chart an empty box of its height (tests/e2e/test_layout_probe.py
checks that a probed page is laid out as the real one):

    python -m bench.projector_fit [--lesson ID] [--sizes 1920x1080,1280x720] [--save]

``testkit.projector`` holds the measuring, which tests/e2e/test_projector_fit_*.py assert on.
Needs Playwright (pip) and Debian's Chromium at /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import time

from testkit.projector import SIZES, misfits, walk_lesson
from testkit.streamlit_server import CHROMIUM, CHROMIUM_FLAGS, LAYOUT_PROBE, ROOT, serve_app


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
    with serve_app("tiny", LAYOUT_PROBE) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        for lesson in lessons:
            context = browser.new_context()
            found += walk_lesson(context.new_page(), url, lesson, sizes)
            context.close()
        browser.close()
    bad = misfits(found)
    report = [
        f"# python -m bench.projector_fit --sizes {args.sizes}" + (f" --lesson {args.lesson}" if args.lesson else ""),
        f"{len(found) - len(bad)} of {len(found)} step views fit one screen with no metric label cut, no text "
        f"hidden in a scrolling box and no text under the floor "
        f"({time.monotonic() - started:.0f} s)",
        *bad,
    ]
    print("\n".join(report))
    if args.save:
        out = ROOT / "bench" / "results" / f"{time.strftime('%Y-%m-%d')}-cpu-projector-fit.txt"
        out.write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
