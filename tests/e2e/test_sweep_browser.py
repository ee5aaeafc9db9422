"""The Sweep page in a real browser (Chromium + Playwright against `streamlit run`, random checkpoint): a small sweep
of recompute against swap under one release, each point twice; its legend names each series' release, its chart says
which clock it shows and switches clock without running again; a screenshot saved under artifacts/ (issue 47)."""

from __future__ import annotations

import re

from testkit.page_wait import wait_settled

VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 180_000  # a bound on failure only: a sweep on a busy 2-core machine


def fill(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Tab")


def test_a_sweep_names_each_series_release_and_its_clock(browser, app_url, artifacts):
    context = browser.new_context(viewport=VIEWPORT, color_scheme="light", device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(app_url + "/sweep")
        page.get_by_text("Run sweep").first.wait_for()
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        release = (
            page.locator('[data-testid="stSelectbox"]')
            .filter(has_text="Release")
            .first.evaluate("e => e.innerText + ' ' + [...e.querySelectorAll('input')].map(i => i.value).join(' ')")
        )
        assert "v0.6: vLLM 0.6.3 (V0)" in release  # the release every mode runs under, chosen once
        fill(page, "requests", "4")
        fill(page, "max_tokens each", "16")
        fill(page, "repeats per point", "2")
        fill(page, "pool size (blocks) values", "8,12")
        page.locator("button").filter(has_text="Run sweep").first.click()
        runs = page.locator(".st-key-sweep_runs .js-plotly-plot").first
        runs.wait_for(timeout=TIMEOUT_MS)
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        text = runs.inner_text()
        assert "recompute, vLLM 0.6.3 (V0)" in text and "swap, vLLM 0.6.3 (V0)" in text
        assert "end-to-end (s, CPU)" in text and "median of 2 repeats" in text
        assert page.get_by_text(re.compile(r"only the mode differs")).count()
        assert page.get_by_text(re.compile(r"load average [\d.]+")).count()
        page.locator(".st-key-sweep_runs").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.mouse.move(1, 1)
        page.screenshot(path=str(artifacts / "sweep_browser.png"))
        page.get_by_role("radio", name="wall time").first.click()  # another clock: a redraw
        page.get_by_text("end-to-end (s, wall)").first.wait_for()
        assert "end-to-end (s, wall)" in page.locator(".st-key-sweep_runs .js-plotly-plot").first.inner_text()
        assert not page.locator('[data-testid="stException"]').count()
    finally:
        context.close()
