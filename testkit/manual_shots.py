"""The manual's screenshots: which page of the app each one shows, how to get there, and what must be on screen.
One table for the two uses: ``tests/e2e/test_manual_screenshots.py`` reaches every page the manual shows (and fails
when one cannot be reached), and the same test run with ``PYKV_WRITE_SCREENSHOTS=1`` writes the PNGs under
``docs/img/``:

    PYKV_WRITE_SCREENSHOTS=1 python -m pytest tests/e2e/test_manual_screenshots.py

A shot's ``stage`` runs before the check; ``costly`` steps (a whole sweep) only when writing the pictures. The PNGs
are quantised to a palette (a screen of flat colours and text loses nothing a reader sees) so the manual's
pictures stay small. Imports no pykv: it drives a page by what a person sees."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from testkit.page_wait import wait_settled

IMG = Path(__file__).resolve().parent.parent / "docs" / "img"
VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 180_000  # a bound on failure only: a sweep on a busy 2-core machine takes a minute
MAX_COLOURS = 128
# Drawn: no placeholder of an element still to come (a fragment or a side run can redraw after the run is over)
DRAWN_JS = """() => !document.querySelector('[data-testid="stSkeleton"], [data-stale="true"], .stSpinner')
    && document.getAnimations().every(a => a.playState !== 'running')"""


@dataclass(frozen=True)
class Shot:
    name: str  # docs/img/<name>.png
    path: str  # the app's URL path and query
    expect: str  # a regular expression some text on the page matches once it is there
    stage: Callable | None = None  # (page, writing) -> None: what a person does before the picture
    scroll_to: str | None = None  # a Playwright selector scrolled to the top of the screen before the picture


def _next_preemption(page, writing: bool) -> None:
    page.locator(".st-key-next_preemption button").first.click()
    page.get_by_text(re.compile(r"preempted by recompute")).first.wait_for(timeout=TIMEOUT_MS)


def _run_sweep(page, writing: bool) -> None:
    if writing:  # costly: the default sweep is 18 runs to completion (6 points x 3 repeats)
        page.locator("button").filter(has_text="Run sweep").first.click()
        page.locator(".st-key-sweep_runs").first.wait_for(timeout=TIMEOUT_MS)


def _example_log(page, writing: bool) -> None:
    page.get_by_text("…or try an example log").first.wait_for()
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name=re.compile(r"v1-0\.33")).first.click()
    page.get_by_text(re.compile(r"Preemption storm")).first.wait_for(timeout=TIMEOUT_MS)


def _start_class(page, writing: bool) -> None:
    page.locator("button").filter(has_text="Start a class").first.click()
    page.get_by_text(re.compile(r"^Class code")).first.wait_for(timeout=TIMEOUT_MS)


LESSON = "recompute-is-a-rollback"
SHOTS = (
    Shot("playground", "/?preset=storm", r"^Step \d+", _next_preemption),
    Shot("sweep", "/sweep", r"Run sweep", _run_sweep, scroll_to=".st-key-sweep_runs"),
    Shot("lesson", f"/lessons?lesson={LESSON}&step=2", r"step 2 of \d+$"),
    Shot("projector", f"/lessons?lesson={LESSON}&step=2&presenter=1", r"step 2 of \d+$"),
    Shot("class", f"/lessons?lesson={LESSON}&step=1", r"step 1 of \d+$", _start_class),
    Shot("server", "/server", r"Your server", _example_log, scroll_to="text=/^Release: /"),
)


def take(page, base_url: str, shot: Shot, writing: bool) -> None:
    """Open ``shot``'s page, do what it says, check what must show (raise if not), and when ``writing`` save it."""
    page.goto(base_url + shot.path)
    page.get_by_text(re.compile(shot.expect)).first.wait_for(timeout=TIMEOUT_MS)
    wait_settled(page, timeout_ms=TIMEOUT_MS)
    if shot.stage is not None:
        shot.stage(page, writing)
        wait_settled(page, timeout_ms=TIMEOUT_MS)
    errors = page.locator('[data-testid="stException"]')
    if errors.count():
        raise AssertionError(f"{shot.name}: the page shows an error: {errors.first.inner_text()[:300]}")
    if writing:
        if shot.scroll_to and page.locator(shot.scroll_to).count():
            page.locator(shot.scroll_to).first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.mouse.move(1, 1)  # no tooltip over the picture
        drawn(page)
        save_png(page.screenshot(), IMG / f"{shot.name}.png")


def drawn(page) -> None:
    """Until every element is drawn and the layout has held still (settled twice in a row with nothing pending)."""
    for _ in range(10):
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        page.wait_for_function(DRAWN_JS, polling=100, timeout=TIMEOUT_MS)
        page.wait_for_timeout(500)  # what a person's eye would wait; then it must still be drawn
        if page.evaluate(DRAWN_JS):
            wait_settled(page, timeout_ms=TIMEOUT_MS)
            return


def save_png(raw: bytes, path: Path) -> None:
    """A screenshot as a small PNG: a palette of ``MAX_COLOURS`` colours, compressed as far as PNG goes."""
    from PIL import Image

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    small = image.quantize(colors=MAX_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    path.parent.mkdir(parents=True, exist_ok=True)
    small.save(path, optimize=True)
