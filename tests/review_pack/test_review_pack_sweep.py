"""The sweep's review pack: every chart the Sweep page draws (the modelled ones labelled), its tables written as
people write numbers, and every figure laid out for the width it is drawn at."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from pykv.review_pack import render_html, sweep_pack
from pykv.review_pack.fit import overflows
from pykv.review_pack.page import PAGE_WIDTH_PX
from pykv.review_pack.sweep_tables import RUN_TABLE, formatted_table, with_spreads
from pykv.viz import preemption_cost_figure
from testkit.review_packs import SCIENTIFIC, assert_fits, priced_pool_sweep, section, section_html, visible_text

PAGE_CHARTS = [
    "sweep-runs",
    "sweep-recompute-tax",
    "sweep-preemption-cost",  # the Sweep page's, in its order
    "sweep-modelled-throughput",
    "sweep-modelled-crossover",
]  # (a block_size sweep adds its cost per KiB)


@pytest.fixture(scope="module")
def priced_sweep(random_llama, random_llama_path):
    return priced_pool_sweep(random_llama, random_llama_path)


@pytest.fixture(scope="module")
def sweep_review(priced_sweep, random_llama):
    spec, result, est = priced_sweep
    pack = sweep_pack(spec, result, model=random_llama.config, estimate=est)
    return pack, render_html(pack).decode()


def test_the_sweep_pack_draws_every_chart_the_sweep_page_draws(sweep_review, priced_sweep):
    pack, html = sweep_review
    assert [f.name for f in pack.figures()] == PAGE_CHARTS
    assert html.count("Plotly.newPlot(") == len(PAGE_CHARTS)
    label = priced_sweep[2].label
    modelled = section(pack, "modelled")
    assert modelled.title == f"Modelled on {label}" and [f.name for f in modelled.figures()] == PAGE_CHARTS[3:]
    for f in modelled.figures():  # labelled modelled, the target named, in the title itself
        assert "modelled" in f.figure.layout.title.text and label in f.figure.layout.title.text, f.name
    text = visible_text(section_html(html, "modelled"))
    assert f"Modelled, not measured, on {label}" in text and "run time (modelled)" in text and "NVIDIA H100" in text
    cover = visible_text(html[: html.index('<section id="config">')])
    assert re.search(rf"modelled on\s+{re.escape(label)} \(modelled, not measured\)", cover)


def test_the_sweep_packs_tables_write_numbers_as_people_do(sweep_review):
    pack, html = sweep_review
    for sid in ("runs", "preemptions", "modelled"):
        table_html = section_html(html, sid)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", table_html)
        assert cells and not [c for c in cells if SCIENTIFIC.search(c)], sid
        headers = re.findall(r"<th>(.*?)</th>", table_html)
        assert headers and not [h for h in headers if "_" in h], headers  # words, not column names
    runs = section_html(html, "runs")
    assert re.search(r'<td class="num">\d+\.\d\d s</td>', runs)  # wall time: fixed decimals and its unit
    assert re.search(r'<td class="num">[\d.]+ (B|KiB|MiB)</td>', runs)  # bytes swapped out


def test_a_runs_table_never_writes_scientific_notation():
    runs = pd.DataFrame(
        [
            {
                "series": "swap, vLLM 0.6.3 (V0)",
                "value": 24,
                "preemptions": 1234,
                "recomputed_tokens": 0,
                "swapped_bytes": 7_929_856.0,
                "cpu_s": 1.0e-5,
                "cpu_s_lo": 0.9e-5,
                "cpu_s_hi": 1.4e-5,
                "wall_s": 1.2e-5,
                "wall_s_lo": 1.2e-5,
                "wall_s_hi": 1.2e-5,
                "recompute_cpu_s": 1e-7,
                "recompute_s": 1e-7,
                "swap_s": float("nan"),
                "modelled_pcie_gen5_s": 4.17e-4,
                "load_1m": 3.456,
            }
        ]
    )
    out = formatted_table(with_spreads(runs), RUN_TABLE, "runs")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", out)
    assert cells == [
        "swap, vLLM 0.6.3 (V0)",
        "24",
        "1,234",
        "0",
        "7.6 MiB",
        "0.00 s",
        "50%",
        "0.00 s",
        "0%",
        "0.0 ms",
        "0.0 ms",
        "—",
        "0.417 ms",
        "3.46",
    ]
    assert "<th>swaps over PCIe Gen5 (modelled)</th>" in out and "<th>CPU spread</th>" in out


def test_the_sweep_pack_names_each_series_release_its_clock_and_the_load(sweep_review):
    pack, html = sweep_review
    cover = visible_text(html[: html.index('<section id="config">')])
    assert "recompute, vLLM 0.6.3 (V0)" in cover and "swap, vLLM 0.6.3 (V0)" in cover
    assert "each run 2 times" in cover and "CPU time of the engine thread (time.thread_time)" in cover
    assert re.search(r"load while it ran\s+[\d.]+ to [\d.]+ \(1-minute load average", cover)
    assert "Every series ran under vllm_profile=v0.6: only the mode differs." in cover
    runs = visible_text(section_html(html, "runs"))
    assert "recompute, vLLM 0.6.3 (V0)" in runs and "CPU spread" in runs and "median of 2 run(s)" in runs
    assert "CPU time of the engine thread, median of 2 repeats" in pack.figures()[0].figure.layout.title.subtitle.text


def test_every_sweep_figure_fits_the_width_it_is_drawn_at(sweep_review, priced_sweep):
    pack, _ = sweep_review
    assert_fits(pack)
    raw = preemption_cost_figure(priced_sweep[1].preemptions)  # as the page draws it, for a wide column
    assert overflows(raw, PAGE_WIDTH_PX)  # its subtitle and legend would be cut off at the pack's width unfitted
