"""A review pack in a real browser (Debian's Chromium, Playwright), opened from file:// with every other
request blocked and recorded: every figure draws, nothing is logged as an error, nothing leaves the page,
and printing to PDF gives one run of pages per section (the PDF is saved under artifacts/); and in a run's
pack and a sweep's, every figure's title, subtitle, legend and notes lie within the figure as drawn
(issue 28 #14: legends and a subtitle were cut off at the right edge)."""

from __future__ import annotations

import math
import re

import pytest

from pykv.border.workload import make_workload
from pykv.lab.lab import Lab, lab_config
from pykv.review_pack import record_from_lab, render_html, run_pack, sweep_pack
from testkit.review_packs import priced_pool_sweep

A4_CONTENT_PX = (297 - 2 * 12) / 25.4 * 96  # the page's height less its 12 mm margins (the pack's @page), in px


@pytest.fixture(scope="module")
def review(random_llama, random_llama_path, tmp_path_factory):
    """A v0.6 swap run with preemptions on the random checkpoint, as a pack on disk: (path, pack)."""
    config = lab_config(
        model=str(random_llama_path),
        vllm_profile="v0.6",
        num_gpu_blocks=24,
        block_size=8,
        preemption_mode="swap",
        num_cpu_blocks=48,
    )
    lab = Lab(config, random_llama, workload=make_workload("storm", n=4, max_tokens=24))
    lab.goto(60)
    pack = run_pack(record_from_lab(lab, preset="storm", preset_args={"n": 4, "max_tokens": 24}))
    path = tmp_path_factory.mktemp("review") / "review.html"
    path.write_bytes(render_html(pack))
    return path, pack


def test_the_pack_draws_every_figure_offline_and_prints_a_page_run_per_section(browser, review, artifacts):
    path, pack = review
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    left, errors = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            left.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    try:
        page.goto(path.as_uri())
        figures = len(pack.figures())
        page.wait_for_function(
            f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {figures}", timeout=30_000
        )
        assert page.locator(".js-plotly-plot").count() == figures
        assert page.locator(".main-svg").count() >= figures  # plotly draws 2-3 layers per figure
        assert page.locator("section h2").count() == len(pack.sections)
        page.emulate_media(media="print")
        heights = page.evaluate(
            "() => [...document.querySelectorAll('main > section')].map(s => s.getBoundingClientRect().height)"
        )
        expected = sum(max(1, math.ceil(h / A4_CONTENT_PX)) for h in heights)
        pdf = page.pdf(prefer_css_page_size=True, print_background=True)
        (artifacts / "review_pack.pdf").write_bytes(pdf)
        pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))
        assert abs(pages - expected) <= 1, (pages, expected, heights)
        assert pages >= len(pack.sections) + 1  # the cover, then each section from a page of its own
        assert not errors, errors
        assert not left, left
    finally:
        context.close()


# Each text-bearing part of each figure, as the browser drew it, against the figure's own box (px; 1 px of slack).
OUTSIDE = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(div => {
  const box = div.querySelector('.main-svg').getBoundingClientRect();
  return [...div.querySelectorAll('.legend, .annotation, .gtitle, .gtitle-subtitle')].map(el => {
    const r = el.getBoundingClientRect();
    return {figure: div.id, part: el.getAttribute('class'), text: (el.textContent || '').slice(0, 60),
            left: r.left - box.left, right: box.right - r.right, top: r.top - box.top, bottom: box.bottom - r.bottom};
  }).filter(o => Math.min(o.left, o.right, o.top, o.bottom) < -1);
})"""


@pytest.fixture(scope="module")
def sweep_review(random_llama, random_llama_path, tmp_path_factory):
    """A small pool sweep priced on the default target as the Sweep page prices it, as a pack on disk."""
    spec, result, est = priced_pool_sweep(random_llama, random_llama_path)
    pack = sweep_pack(spec, result, model=random_llama.config, estimate=est)
    path = tmp_path_factory.mktemp("sweep") / "review.html"
    path.write_bytes(render_html(pack))
    return path, pack


@pytest.mark.parametrize("which", ["review", "sweep_review"])
def test_every_figure_keeps_its_text_and_legend_within_its_box(browser, request, which):
    path, pack = request.getfixturevalue(which)
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    try:
        page.goto(path.as_uri())
        page.wait_for_function(
            f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {len(pack.figures())}", timeout=30_000
        )
        assert page.evaluate(OUTSIDE) == []
    finally:
        context.close()


@pytest.fixture(scope="module")
def mixed_review(random_llama, random_llama_path, tmp_path_factory):
    """A v0.6 swap run whose CPU pool runs out, so that swaps fall back to recompute: both lanes of the timeline's
    preemption strip, R and S, at the pack's size. (path, pack)."""
    config = lab_config(
        model=str(random_llama_path),
        vllm_profile="v0.6",
        num_gpu_blocks=24,
        block_size=8,
        preemption_mode="swap",
        num_cpu_blocks=10,  # a victim needs about 8: one swap fits, the next falls back
    )
    lab = Lab(config, random_llama, workload=make_workload("storm", n=6, max_tokens=24))
    lab.goto(80)
    assert {p.mode for p in lab.view.preemptions} == {"recompute", "swap"}, "the fixture must swap and fall back"
    pack = run_pack(record_from_lab(lab, preset="storm", preset_args={"n": 6, "max_tokens": 24}))
    path = tmp_path_factory.mktemp("mixed") / "review.html"
    path.write_bytes(render_html(pack))
    return path, pack


def _opened(browser, path, pack):
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_function(
        f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {len(pack.figures())}", timeout=30_000
    )
    return context, page


# The boxes of the timeline's legend entries, and of its preemption markers by lane (subplot 3: R, then S), as drawn.
TIMELINE_BOXES = """() => {
  const fig = document.querySelector('#fig-timeline');
  const box = el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const legend = [...fig.querySelectorAll('.infolayer [class^="legend"] .traces')].map(el => [el.textContent, box(el)]);
  const lanes = [...fig.querySelectorAll('.subplot.x3y3 .scatterlayer .trace')]
    .map(t => [...t.querySelectorAll('.point')].map(box));
  return {legend, lanes};
}"""


def _overlap(a, b, slack=0.5):
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def test_the_timeline_keeps_r_above_s_and_every_legend_entry_clear(browser, mixed_review, artifacts):
    """Issue 48 #15: the R and S markers overlapped, and "R = recompute" covered the queues legend's "swapped"."""
    path, pack = mixed_review
    context, page = _opened(browser, path, pack)
    try:
        page.locator("#fig-timeline").screenshot(path=str(artifacts / "review_pack_timeline.png"))
        drawn = page.evaluate(TIMELINE_BOXES)
    finally:
        context.close()
    names = [name for name, _ in drawn["legend"]]
    assert {"swapped", "R = recompute", "S = swap"} <= set(names), names
    for i, (name, a) in enumerate(drawn["legend"]):
        for other, b in drawn["legend"][i + 1 :]:
            assert not _overlap(a, b), (name, other, a, b)
    recompute, swap = drawn["lanes"]
    assert recompute and swap
    assert max(r[3] for r in recompute) <= min(s[1] for s in swap), "the R lane runs into the S lane"


# Every chart subtitle as drawn: its font size and lines.
SUBTITLES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(div =>
  [...div.querySelectorAll('.gtitle-subtitle')].map(el => ({
    figure: div.id, text: el.textContent.slice(0, 60), size: parseFloat(getComputedStyle(el).fontSize),
    lines: Math.max(1, el.querySelectorAll('tspan.line').length),
  })))"""


@pytest.mark.parametrize("which", ["review", "sweep_review"])
def test_every_subtitle_is_readable_at_the_page_width(browser, request, which):
    """Issue 48 #15: the app's subtitles came out at plotly's ~10 px and three or four lines at the page's 700 px."""
    path, pack = request.getfixturevalue(which)
    context, page = _opened(browser, path, pack)
    try:
        subtitles = page.evaluate(SUBTITLES)
    finally:
        context.close()
    assert subtitles  # the crossover has one, and the sweep's charts
    assert [s for s in subtitles if s["size"] < 11 or s["lines"] > 2] == []


# The crossover: the gap between its subtitle and its plot area, and what its figure and caption say.
CROSSOVER = """() => {
  const fig = document.querySelector('#fig-modelled-crossover');
  const sub = fig.querySelector('.gtitle-subtitle').getBoundingClientRect();
  const plot = fig.querySelector('.nsewdrag').getBoundingClientRect();
  return {gap: plot.top - sub.bottom, text: fig.closest('figure').innerText};
}"""


def test_the_crossover_says_modelled_once_and_leaves_no_empty_band(browser, review):
    path, pack = review
    context, page = _opened(browser, path, pack)
    try:
        drawn = page.evaluate(CROSSOVER)
    finally:
        context.close()
    assert 0 <= drawn["gap"] <= 30, drawn["gap"]  # the subtitle's last line, then the plot (it was ~60 px of nothing)
    assert drawn["text"].count("not measured") == 1, drawn["text"]
