"""The playground in a real browser (Chromium + Playwright against `streamlit run`): load, step until
a preemption, check the grid, queues and narration, keyboard stepping, and screenshots in light and
dark saved under artifacts/."""

from __future__ import annotations

import re

import pytest

from testkit.page_wait import wait_settled

VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 120_000  # a bound on failure only: a first load on a busy 2-core machine can take 40 s


def open_page(browser, url: str, scheme: str):
    context = browser.new_context(viewport=VIEWPORT, color_scheme=scheme, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return context, page


def shown_step(page) -> int:
    text = page.get_by_text(re.compile(r"^Step \d+")).first.inner_text()
    return int(re.match(r"Step (\d+)", text).group(1))


def wait_for_step(page, step: int) -> None:
    page.get_by_text(re.compile(rf"^Step {step}\b")).first.wait_for()


def wait_idle(page) -> None:
    """Until the script runs are over and the layout holds still (a key pressed during a run can be lost; the
    first run is often followed at once by a second, the browser reporting its theme)."""
    wait_settled(page, timeout_ms=TIMEOUT_MS)


def press(page, key: str, expect_step: int) -> None:
    """Press a shortcut key and wait for the step it leads to. A key pressed while the page is
    busy can be dropped (Streamlit only handles it once the rerun is over): press once more only
    if the page still shows the old step after a while."""
    before = shown_step(page)
    for attempt in range(3):
        wait_idle(page)
        page.locator("body").press(key)
        try:
            page.get_by_text(re.compile(rf"^Step {expect_step}\b")).first.wait_for(timeout=8_000)
            return
        except Exception:
            if shown_step(page) != before:
                break
    wait_for_step(page, expect_step)


def figure(page, title: str):
    return page.locator(".js-plotly-plot").filter(has_text=title).first


def click(page, label: str) -> None:
    page.locator("button").filter(has_text=label).first.click()


def pause(page) -> None:
    """Click Pause until the button reads Play again. The buttons are found by their widget keys (a CSS class):
    a role query computes accessible names over the whole page, thousands of plotly SVG nodes, and on a busy
    2-core machine that alone outlasted a 3 s click timeout ten times in a row (CI, 2026-12-02). Streamlit draws
    each button twice (the second copy measures its width), hence ``.first``."""
    for _ in range(10):
        try:
            # force: click where the button is, as a person does; Playwright's wait for a "stable" element never
            # ends while the timer fragment re-renders the controls on every tick
            page.locator(".st-key-pause button").first.click(timeout=10_000, force=True)
        except Exception:  # re-rendered under the pointer: look again
            pass
        wait_idle(page)
        if page.locator(".st-key-play button").count():
            return
    raise AssertionError("Pause never took effect")


def above_the_fold(locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] + box["height"] <= VIEWPORT["height"]


@pytest.mark.slow  # two minutes in CI
def test_light_step_to_a_preemption(browser, app_url, artifacts):
    context, page = open_page(browser, app_url, "light")
    try:
        wait_for_step(page, 0)
        grid, queues = figure(page, "Device KV pool"), figure(page, "Queues")
        grid.wait_for()
        queues.wait_for()
        press(page, "ArrowRight", 1)  # keyboard Step
        click(page, "Next preemption")
        page.get_by_text(re.compile(r"preempted by recompute: \d+ blocks freed")).first.wait_for()
        step = shown_step(page)
        assert step > 1
        assert re.search(rf"step={step}\b", page.url) and "preset=storm" in page.url
        # the grid shows used cells with ref counts and the queues their lanes
        assert grid.locator("text", has_text=re.compile(r"^1$")).count() > 0
        for lane in ("WAITING", "RUNNING", "SWAPPED", "FINISHED"):
            assert queues.get_by_text(re.compile(lane)).count() > 0
        assert above_the_fold(grid) and above_the_fold(queues)
        assert above_the_fold(page.get_by_text(re.compile(r"preempted by recompute")).first)
        press(page, "ArrowLeft", step - 1)  # keyboard Back
        press(page, "ArrowRight", step)
        wait_idle(page)
        page.screenshot(path=str(artifacts / "playground-light.png"))
        # a figure's Export popover draws its buttons when it opens (a rerun), and they download the figure
        assert not page.locator(".st-key-grid_gpu_svg").count()
        page.locator(".st-key-grid_gpu_export button").first.click()
        with page.expect_download() as download:
            page.locator(".st-key-grid_gpu_svg button").click()
        assert download.value.suggested_filename == f"pykv_step{step}_kv_pool.svg"
        svg = download.value.path().read_text()
        assert svg.startswith("<svg") and "Device KV pool" in svg
        page.keyboard.press("Escape")
        wait_idle(page)
        page.locator(".st-key-playground_review_pack button").first.click()  # the same for the review pack
        page.locator(".st-key-playground_review_html button").wait_for()
        page.keyboard.press("Escape")
        wait_idle(page)
        # slow: a tick every second leaves the page idle between ticks on a busy 2-core machine, so a click lands
        # (at "normal", 0.5 s, a render as long as the tick leaves no idle moment and a click can be lost)
        click(page, "slow")
        wait_idle(page)
        click(page, "Play")  # the timer fragment steps on its own
        wait_for_step(page, step + 2)
        pause(page)
        wait_idle(page)
        paused = shown_step(page)
        page.wait_for_timeout(1500)  # a timer tick is 1 s at "slow": a step would have been taken by now
        assert shown_step(page) == paused
        assert not page.get_by_test_id("stException").count()
    finally:
        context.close()


def first_preemption_step(random_llama, random_llama_path) -> int:
    """Where the app's default run first preempts, computed here: the engine is deterministic, so a
    link to that step must show the same preemption in the browser's session."""
    from pykv.lab.lab import Lab
    from pykv.ui.session.state import DEFAULT_PRESET, default_config

    lab = Lab(default_config().replace(model=str(random_llama_path)), random_llama, DEFAULT_PRESET)
    assert lab.run_to_next_preemption()
    return lab.cursor


def test_dark_deep_link_reproduces_a_preemption(browser, app_url, artifacts, random_llama, random_llama_path):
    step = first_preemption_step(random_llama, random_llama_path)
    context, page = open_page(browser, f"{app_url}/?preset=storm&step={step}", "dark")
    try:
        wait_for_step(page, step)
        page.get_by_text(re.compile(r"preempted by recompute: \d+ blocks freed")).first.wait_for()
        grid = figure(page, "Device KV pool")
        grid.wait_for()
        background = grid.locator(".main-svg").first.evaluate("e => getComputedStyle(e).backgroundColor")
        assert background == "rgb(14, 17, 23)", background  # the dark template, not white
        wait_idle(page)
        page.screenshot(path=str(artifacts / "playground-dark.png"))
        assert not page.get_by_test_id("stException").count()
    finally:
        context.close()
