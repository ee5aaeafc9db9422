"""Sweep figures on hand-made frames: panels, measured vs modelled styling, per-KiB costs, device labels."""

from __future__ import annotations

import pandas as pd
import pytest

from pykv.lab.sweep import PREEMPTION_COLUMNS, RUN_COLUMNS
from pykv.viz import block_size_cost_figure, preemption_cost_figure, runs_figure, template
from pykv.viz.sweep_charts import MODE_COLORS


def runs(axis="num_gpu_blocks") -> pd.DataFrame:
    rows = [
        dict.fromkeys(RUN_COLUMNS, 0)
        | {
            "series": f"{mode}, vLLM 0.6.3 (V0)",
            "mode": mode,
            "vllm_profile": "v0.6",
            "axis": axis,
            "value": value,
            "wall_s": 1.0 + i,
            "wall_s_lo": 0.95 + i,
            "wall_s_hi": 1.1 + i,
            "cpu_s": 0.5 + i,
            "cpu_s_lo": 0.45 + i,
            "cpu_s_hi": 0.55 + i + (1.0 if value == 16 else 0),  # the last point's spread is large
            "tokens_per_s": 100.0 - i,
            "tokens_per_cpu_s": 200.0 - i,
            "preemptions": 4 - i,
            "repeats": 3,
            "load_1m": 1.5 + i,
            "device": "cpu",
        }
        for mode in ("recompute", "swap")
        for i, value in enumerate((48, 32, 16))
    ]
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def preemption(mode, seq_len, measured_s, num_bytes, block_size=16, gen5=None) -> dict:
    swap = mode.startswith("swap")
    return dict.fromkeys(PREEMPTION_COLUMNS) | {
        "series": mode,  # as a frame made before series had releases: the figures draw it as it is named
        "mode": mode,
        "preemption_mode": "swap" if swap else "recompute",
        "block_size": block_size,
        "seq_len": seq_len,
        "num_bytes": num_bytes,
        "measured_s": measured_s,
        "measured_cpu_s": measured_s / 2,
        "device": "cpu",
        "modelled_pcie_gen5_s": gen5 if swap else None,
        "modelled_pcie_gen4_s": 2 * gen5 if swap else None,
    }


@pytest.fixture
def costs() -> pd.DataFrame:
    rows = [
        preemption("recompute", 40, 2e-3, 4096, 4),
        preemption("recompute", 80, 4e-3, 8192, 16),
        preemption("swap", 40, 1e-4, 4096, 4, gen5=3e-5),
        preemption("swap", 80, 1e-4, 8192, 16, gen5=4e-5),
        preemption("swap", 80, 3e-4, 8192, 16, gen5=6e-5),
    ]
    return pd.DataFrame(rows, columns=PREEMPTION_COLUMNS)


def test_runs_figure_has_three_panels_one_legend_entry_per_series_and_names_the_device():
    fig = runs_figure(runs(), measure="wall")
    legend = [t.name for t in fig.data if t.showlegend]
    assert legend == ["recompute, vLLM 0.6.3 (V0)", "swap, vLLM 0.6.3 (V0)"]  # each series names its release
    assert {t.yaxis for t in fig.data} == {"y", "y2", "y3"}
    first = fig.data[0]
    assert list(first.x) == [16, 32, 48] and list(first.y) == [3.0, 2.0, 1.0]  # sorted by the swept value
    assert first.line.color == MODE_COLORS["recompute"] and first.marker.symbol == "circle"  # v0.6's marker
    assert "pool shrinks" in fig.layout.title.text and "measured on cpu" in fig.layout.title.subtitle.text


def test_runs_figure_draws_the_chosen_clock_as_a_median_with_its_spread_and_rings_a_noisy_point():
    fig = runs_figure(runs())  # the CPU clock by default
    subtitle = fig.layout.title.subtitle.text
    assert "CPU time of the engine thread, median of 3 repeats (bars: fastest to slowest)" in subtitle
    assert "load average 1.5–3.5" in subtitle and "Preemptions counted: the same every repeat" in subtitle
    assert (
        fig.layout.yaxis.title.text == "end-to-end (s, CPU)" and fig.layout.yaxis3.title.text == "preemptions (counted)"
    )
    first = fig.data[0]
    assert list(first.y) == [2.5, 1.5, 0.5]  # cpu_s, not wall_s
    assert list(first.error_y.array) == pytest.approx([1.05, 0.05, 0.05])  # to the slowest repeat
    assert list(first.error_y.arrayminus) == pytest.approx([0.05, 0.05, 0.05])  # to the fastest
    assert fig.data[2].error_y.array is None  # counts have no spread
    rings = [t for t in fig.data if t.name.startswith("spread > 25%")]
    assert rings and list(rings[0].x) == [16] and sum(bool(t.showlegend) for t in rings) == 1
    wall = runs_figure(runs(), measure="wall")
    assert wall.layout.yaxis.title.text == "end-to-end (s, wall)" and "wall time" in wall.layout.title.subtitle.text
    assert not [t for t in wall.data if t.name.startswith("spread")]  # the wall clock's spreads are small here


def test_a_series_on_another_release_has_its_own_marker():
    frame = runs()
    frame.loc[frame["mode"] == "swap", ["series", "vllm_profile"]] = ["recompute, vLLM 0.33.0 (V1)", "v0.33"]
    frame.loc[frame["vllm_profile"] == "v0.33", "mode"] = "recompute"
    fig = runs_figure(frame)
    symbols = {t.name: t.marker.symbol for t in fig.data if t.showlegend and "spread" not in t.name}
    assert symbols == {"recompute, vLLM 0.6.3 (V0)": "circle", "recompute, vLLM 0.33.0 (V1)": "square"}


def test_max_num_seqs_runs_mark_what_the_pool_carries():
    fig = runs_figure(runs("max_num_seqs"), capacity=32)
    assert "max_num_seqs" in fig.layout.title.text and fig.layout.xaxis.title.text == "max_num_seqs"
    assert fig.layout.shapes[0].x0 == 32 and "carries 32 requests" in fig.layout.annotations[0].text


def test_cost_figure_keeps_measured_and_modelled_apart(costs):
    fig = preemption_cost_figure(costs, measure="wall")
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {
        "recompute, measured",
        "swap, measured",
        "swap, modelled PCIe Gen5",
        "swap, modelled PCIe Gen4",
    }
    for name, trace in by_name.items():
        if "modelled" in name:
            assert trace.line.dash in ("dash", "dot") and trace.marker.symbol == "circle-open"
        else:
            assert trace.mode == "markers" and trace.marker.symbol == "circle"
    gen5 = by_name["swap, modelled PCIe Gen5"]
    assert list(gen5.x) == [40, 80] and list(gen5.y) == pytest.approx([0.03, 0.05])  # ms, mean per length
    subtitle = fig.layout.title.subtitle.text
    assert "measured on cpu" in subtitle and "PCIe, not measured" in subtitle


def test_block_size_figure_prices_both_modes_per_kib_of_kv(costs):
    fig = block_size_cost_figure(costs, measure="wall")
    by_name = {t.name: t for t in fig.data}
    recompute, swap = by_name["recompute, measured"], by_name["swap, measured"]
    assert list(recompute.x) == [4, 16] and list(recompute.y) == pytest.approx([500.0, 500.0])  # 2 ms / 4 KiB
    assert list(swap.y) == pytest.approx([25.0, 400 / 16])  # (0.1 + 0.3 ms) / 16 KiB at block 16
    assert "swap, modelled PCIe Gen5" in by_name and "recompute, modelled PCIe Gen5" not in by_name
    assert fig.layout.yaxis.type == "log" and "cpu" in fig.layout.title.subtitle.text
    cpu = {t.name: t for t in block_size_cost_figure(costs).data}["recompute, measured"]
    assert list(cpu.y) == pytest.approx([250.0, 250.0])  # the engine thread's CPU time, the default clock
    assert "CPU" in block_size_cost_figure(costs).layout.yaxis.title.text


def test_cost_figure_reads_the_cpu_clock_by_default_and_says_so(costs):
    fig = preemption_cost_figure(costs)
    recompute = {t.name: t for t in fig.data}["recompute, measured"]
    assert list(recompute.y) == pytest.approx([1.0, 2.0])  # measured_cpu_s, in ms
    assert "CPU time of the engine thread" in fig.layout.title.subtitle.text
    assert "CPU" in fig.layout.yaxis.title.text


def test_empty_sweeps_say_so(costs):
    empty = costs.iloc[0:0]
    for fig in (preemption_cost_figure(empty), block_size_cost_figure(empty)):
        assert not fig.data and "No preemption" in fig.layout.annotations[0].text
    assert "No runs" in runs_figure(runs().iloc[0:0]).layout.annotations[0].text


def test_sweep_figures_use_the_project_template_in_both_themes(costs):
    for dark in (False, True):
        for fig in (
            runs_figure(runs(), dark=dark),
            preemption_cost_figure(costs, dark=dark),
            block_size_cost_figure(costs, dark=dark),
        ):
            assert fig.layout.template.layout.paper_bgcolor == template(dark).layout.paper_bgcolor


def test_log_axes_label_a_1_2_5_series_or_decades_never_plotlys_bare_minor_digits():
    from pykv.viz.theme import log_axis

    narrow = log_axis("ms", [0.3, 4.0])
    assert narrow["tickvals"] == [0.2, 0.5, 1, 2, 5] and narrow["ticktext"] == ["0.2", "0.5", "1", "2", "5"]
    wide = log_axis("ms", [0.012, 120.0, None, 0.0])  # zeros and gaps are not drawn on a log axis
    assert wide["ticktext"] == ["0.01", "0.1", "1", "10", "100"]
    assert log_axis("ms", []) == {"type": "log", "title": {"text": "ms"}}


def test_the_modelled_throughput_charts_share_one_x_axis_under_the_bottom_panel():
    """Anchored to the top panel, the axis and its title sat between the two panels (issue 28 #20)."""
    from pykv.viz.modelled_sweep import modelled_runs_figure

    rows = [
        dict(
            axis="num_gpu_blocks",
            value=v,
            mode=mode,
            tokens_per_s=100.0 + v,
            modelled_tokens_per_s=1e3 + v,
            modelled_target="H100-SXM + Llama-3-8B",
            device="cpu",
        )
        for mode in ("recompute", "swap")
        for v in (24, 32, 40)
    ]
    layout = modelled_runs_figure(pd.DataFrame(rows)).layout
    assert layout.xaxis.anchor == "y2" and layout.yaxis2.domain[0] == 0 < layout.yaxis.domain[0]
    assert layout.xaxis.title.text
