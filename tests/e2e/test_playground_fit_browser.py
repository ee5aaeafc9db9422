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


# 9 requests hold blocks: the legend of the device grid, beside the CPU pool, runs to three lines
SWAP_AT_1440 = (
    "/?preset=storm&num_gpu_blocks=37&max_num_seqs=12&vllm_profile=v0.6&preemption_mode=swap&num_cpu_blocks=37&step=18"
)
# Every chart's title and in-figure notes (a grid's legend) inside the chart's own box, and the chart inside its column.
CHART_CUT_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(plot => {
  const svg = plot.querySelector('.main-svg').getBoundingClientRect();
  const box = plot.closest('[data-testid="stPlotlyChart"]').getBoundingClientRect();
  const cut = [];
  if (svg.right > box.right + 1) cut.push(`chart ${svg.width}px in a ${box.width}px column`);
  for (const t of plot.querySelectorAll('.gtitle, .annotation-text')) {
    const r = t.getBoundingClientRect();
    if (r.width > 0 && (r.right > Math.min(svg.right, box.right) + 1 || r.left < svg.left - 1))
      cut.push(t.textContent.trim().slice(-40));
  }
  return cut;
})"""
# The timeline's step cursor (dashed segments) never runs through a panel's title.
CROSSED_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(p =>
    (p.querySelector('.gtitle') || {}).textContent?.startsWith('Run timeline')).flatMap(plot => {
  const dashes = [...plot.querySelectorAll('.shapelayer path')].map(p => p.getBoundingClientRect());
  return [...plot.querySelectorAll('.annotation-text')].map(t => [t.textContent, t.getBoundingClientRect()])
    .filter(([_, r]) => dashes.some(d => d.top < r.bottom - 1 && d.bottom > r.top + 1)).map(([text]) => text);
})"""
# A table whose last column runs past its box (scrolled out of sight).
TABLE_CUT_JS = """() => [...document.querySelectorAll('[data-testid="stTable"]')].flatMap(t => {
  const box = t.getBoundingClientRect();
  return [...t.querySelectorAll('th, td')].filter(c => c.getBoundingClientRect().right > box.right + 1)
    .map(c => c.textContent.trim());
})"""


@pytest.mark.slow  # a swap storm replayed to step 18 with the kernels interpreted on every layer
def test_nothing_is_cut_at_1440(browser, tiny_app_url):
    """Issue 48 item 10, at 1440x900: the CPU swap grid's title ("CPU swap · 12/24 used"), a grid legend's "changed
    this step", the kernel view's last launch-table column, and the timeline's panel titles under its step cursor."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(tiny_app_url + SWAP_AT_1440 + "&attention_backend=triton")
        page.locator(".st-key-narration").get_by_text("Step 18 ran").first.wait_for()
        page.locator(".gtitle").filter(has_text="CPU swap").first.wait_for()
        page.locator(".annotation-text").filter(has_text="changed this step").first.wait_for()
        page.locator(".gtitle").filter(has_text="Run timeline").first.wait_for()
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for()
        assert page.evaluate(CHART_CUT_JS) == []
        assert page.evaluate(CROSSED_JS) == []
        page.get_by_text("Attention kernels of this step").click()
        page.locator('[data-testid="stTable"]').filter(has_text="blocks from").first.wait_for()
        assert page.evaluate(TABLE_CUT_JS) == []
    finally:
        context.close()
