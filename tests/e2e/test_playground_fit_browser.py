"""What the Playground hides at common screen sizes, measured in a real browser (issue 28 items 17 and 18):
the "This step" narration shows all its text (no fixed height that clips the victim's reason and the modelled
cost), no metric label or value is cut to "..." at 1600x900 or 1280x800, and no chart's note (the queue chart's
badge key) runs past its chart's right edge."""

from __future__ import annotations

import re

import pytest

TIMEOUT_MS = 120_000
DEEP_LINK = "/?preset=storm&num_gpu_blocks=24&step=18"  # a recompute preemption with a modelled bill
CUT_JS = """() => [...document.querySelectorAll(
    '[data-testid="stMetricLabel"] *, [data-testid="stMetricValue"], [data-testid="stMetricValue"] *')]
  .filter(e => e.children.length === 0 && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1))
  .map(e => e.textContent.trim())"""
OUTSIDE_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(plot => {
  const box = plot.querySelector('.main-svg').getBoundingClientRect();
  return [...plot.querySelectorAll('.annotation-text')].filter(t => {
    const r = t.getBoundingClientRect();
    return r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1);
  }).map(t => t.textContent.trim());
})"""
CLIPPED_JS = """() => [...document.querySelectorAll('.st-key-narration, .st-key-narration *')]
  .filter(e => e.scrollHeight > e.clientHeight + 1 && getComputedStyle(e).overflowY !== 'visible')
  .map(e => e.className || e.tagName)"""


def open_at(browser, url: str, width: int, height: int):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url + DEEP_LINK)
    page.get_by_text(re.compile(r"^Step 18\b")).first.wait_for()
    page.locator(".st-key-narration").get_by_text("Step 18 ran").first.wait_for()
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for()
    return context, page


@pytest.mark.slow  # a minute a screen size in CI
@pytest.mark.parametrize("width, height", [(1600, 900), (1280, 800)])
def test_no_metric_label_value_or_chart_note_is_cut(browser, tiny_app_url, width, height):
    context, page = open_at(browser, tiny_app_url, width, height)
    try:
        page.locator('[data-testid="stMetricLabel"]').filter(has_text="Preemption bill (modelled").first.wait_for()
        assert page.evaluate(CUT_JS) == []
        page.locator(".annotation-text").filter(has_text="badges:").first.wait_for()  # the queue chart is drawn
        assert page.evaluate(OUTSIDE_JS) == []
    finally:
        context.close()


def test_the_narration_shows_all_its_text(browser, tiny_app_url):
    context, page = open_at(browser, tiny_app_url, 1440, 900)
    try:
        box = page.locator(".st-key-narration")
        box.get_by_text(re.compile(r"Modelled .*modelled|Modelled ")).first.wait_for()  # the modelled cost line
        assert page.evaluate(CLIPPED_JS) == []
    finally:
        context.close()
