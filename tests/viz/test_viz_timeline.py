"""The run timeline on fixed, hand-made histories: series values, V0 and V1 metric names, the cursor
line, preemption markers by mode, and reading a click's step back from a selection."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from pykv.border.metric_names import MetricNotExportedError
from pykv.border.snapshot import BlockView, Snapshot
from pykv.border.step_report import PreemptionView, StepReport
from pykv.viz import selected_step, timeline_figure
from pykv.viz.queues import MODE_LETTER
from pykv.viz.theme import DARK, LIGHT
from pykv.viz.timeline import MODE_COLOR, SERIES_COLOR


def block(i, pool="gpu", used=False):
    return BlockView(
        i,
        pool,
        int(used),
        ["0"] if used else [],
        [0] if used else [],
        None,
        16 if used else 0,
        "used" if used else "free",
        None if used else i,
    )


def preemption(step, rid, mode):
    return PreemptionView(
        step=step, request_id=rid, mode=mode, num_blocks=1, num_tokens=16, num_bytes=8192, device="cpu"
    )


def report(step, tokens, step_time_s, preempted=(), device="cpu"):
    return StepReport(
        step=step,
        scheduled=[],
        chunks=[],
        preempted=list(preempted),
        swapped_in=[],
        finished=[],
        num_batched_tokens=tokens,
        forward_time_s=step_time_s / 2,
        step_time_s=step_time_s,
        device=device,
    )


def snap(
    step,
    usage,
    running=0,
    waiting=0,
    swapped=0,
    recomputed=0.0,
    rep=None,
    profile="v0.6",
    cpu_used=None,
    cpu_blocks=0,
    metrics=None,
) -> Snapshot:
    """A snapshot after ``step``: ``usage`` (0-1) under the profile's gauge name, unless ``metrics`` is given."""
    if metrics is None:
        metrics = {"pykv:recomputed_tokens_total": recomputed}
        if profile == "v0.6":
            metrics |= {"vllm:gpu_cache_usage_perc": usage, "vllm:num_requests_swapped": float(swapped)}
            if cpu_used is not None:
                metrics["vllm:cpu_cache_usage_perc"] = cpu_used
        else:
            metrics["vllm:kv_cache_usage_perc"] = usage
    queues = {
        "running": [str(i) for i in range(running)],
        "waiting": [f"w{i}" for i in range(waiting)],
        "swapped": [f"s{i}" for i in range(swapped)],
    }
    blocks = [block(i) for i in range(4)] + [block(i, "cpu", used=i == 0) for i in range(cpu_blocks)]
    return Snapshot(step, "cpu", 16, 8192, queues, blocks, [], [], metrics, rep, profile)


@pytest.fixture
def v0_history() -> list[Snapshot]:
    """V0 with swap: a CPU pool of 4 blocks; step 2 swaps req 1 and recomputes req 2, step 3 swaps req 3."""
    return [
        snap(0, 0.0, waiting=3, cpu_used=0.0, cpu_blocks=4),
        snap(1, 0.5, running=3, cpu_used=0.0, cpu_blocks=4, rep=report(1, 60, 0.02)),
        snap(
            2,
            0.75,
            running=1,
            swapped=1,
            waiting=1,
            recomputed=0.0,
            cpu_used=0.25,
            cpu_blocks=4,
            rep=report(2, 2, 0.01, [preemption(2, "1", "swap"), preemption(2, "2", "recompute")]),
        ),
        snap(
            3,
            1.0,
            running=1,
            swapped=2,
            recomputed=16.0,
            cpu_used=0.5,
            cpu_blocks=4,
            rep=report(3, 17, 0.005, [preemption(3, "3", "swap")]),
        ),
    ]


def trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def values(t) -> list[float]:
    return [None if math.isnan(v) else round(float(v), 4) for v in t.y]


def test_series_values_per_step(v0_history):
    fig = timeline_figure(v0_history, 2)
    assert values(trace(fig, "device pool")) == [0, 50, 75, 100]
    assert values(trace(fig, "CPU pool")) == [0, 0, 25, 50]
    assert values(trace(fig, "running")) == [0, 3, 1, 1]
    assert values(trace(fig, "waiting")) == [3, 0, 1, 0]
    assert values(trace(fig, "swapped")) == [0, 0, 1, 2]
    assert values(trace(fig, "recomputed tokens")) == [0, 0, 0, 16]
    assert values(trace(fig, "tokens per step")) == [None, 60, 2, 17]  # step 0 ran nothing: a gap
    assert values(trace(fig, "throughput")) == [None, 3000, 200, 3400]


def test_every_point_sits_at_its_step_on_one_shared_axis(v0_history):
    fig = timeline_figure(v0_history, 0)
    for t in fig.data:
        if t.mode == "lines+markers":
            assert (t.x0, t.dx, t.x) == (0, 1, None) and len(t.y) == len(v0_history)
    layout = fig.to_plotly_json()["layout"]
    xaxes = sorted(k for k in layout if k.startswith("xaxis"))
    assert len(xaxes) == 6 and all(layout[k]["matches"] == "x" for k in xaxes if k != "xaxis")
    assert [k for k in xaxes if layout[k]["showticklabels"]] == ["xaxis6"]  # step numbers under the last panel
    assert layout["xaxis6"]["title"]["text"] == "step"
    assert {t.xaxis for t in fig.data} == {"x", "x2", "x3", "x4", "x5", "x6"}


def test_cursor_is_a_dashed_line_down_every_panel_that_never_crosses_a_panel_title(v0_history):
    """Issue 48 item 10: one line down the whole figure struck through the panel titles between the panels."""
    fig = timeline_figure(v0_history, 2)
    lines = fig.layout.shapes
    assert len(lines) == 6 and {(s.type, s.x0, s.x1, s.xref, s.yref) for s in lines} == {("line", 2, 2, "x", "paper")}
    assert all(s.line.dash == "dash" and s.line.color == LIGHT["font"] for s in lines)
    spans = sorted((s.y0, s.y1) for s in lines)
    assert abs(spans[0][0]) < 1e-9 and spans[-1][1] == 1  # from the bottom panel's foot to the top panel's head
    titles = [a for a in fig.layout.annotations if a.yanchor == "bottom"]  # each sits on its panel's top edge
    assert len(titles) == 6 and all(not any(y0 < t.y < y1 for y0, y1 in spans) for t in titles)
    assert fig.layout.title.text.startswith("Run timeline · step 2 of 3")
    assert timeline_figure(v0_history, 99).layout.shapes[0].x0 == 3  # held to the recorded steps
    assert timeline_figure(v0_history, -5).layout.shapes[0].x0 == 0


def test_preemptions_are_marked_by_mode_at_their_steps(v0_history):
    fig = timeline_figure(v0_history, 3)
    swap, recompute = trace(fig, "S = swap"), trace(fig, "R = recompute")
    assert list(swap.x) == [2, 3] and list(swap.text) == [MODE_LETTER["swap"]] * 2
    assert list(recompute.x) == [2] and list(recompute.text) == ["R"]
    assert swap.marker.color == MODE_COLOR["swap"] == SERIES_COLOR["swapped"]
    assert recompute.marker.color == MODE_COLOR["recompute"] != swap.marker.color
    assert "1× swap: req 1" in swap.hovertext[0] and "req 3" in swap.hovertext[1]
    axis = fig.layout.yaxis3
    assert list(axis.ticktext) == ["R", "S"]  # one lane per mode seen, in MODE_LETTER order
    assert recompute.y[0] != swap.y[0]
    assert not any(a.text == "none yet" for a in fig.layout.annotations)


def test_a_long_run_draws_small_unlettered_squares_that_do_not_overlap(v0_history):
    from pykv.viz.timeline import LETTERED_UP_TO_STEPS

    long = v0_history + [snap(k, 0.5) for k in range(len(v0_history), LETTERED_UP_TO_STEPS + 2)]
    swap = trace(timeline_figure(long, 3), "S = swap")
    assert list(swap.x) == [2, 3] and swap.text is None and swap.mode == "markers" and swap.marker.size < 12


def test_abort_has_its_own_letter_and_a_run_without_preemptions_says_so(v0_history):
    aborted = v0_history[:2] + [snap(2, 0.5, rep=report(2, 1, 0.01, [preemption(2, "9", "abort")]))]
    fig = timeline_figure(aborted, 2)
    assert list(trace(fig, "A = abort").x) == [2] and list(fig.layout.yaxis3.ticktext) == ["A"]
    quiet = timeline_figure(v0_history[:2], 1)
    assert any(a.text == "none yet" for a in quiet.layout.annotations)
    assert not any(len(t.x) for t in quiet.data if t.legend == "legend3")


def test_v1_names_kv_usage_differently_and_has_no_swapped_queue():
    history = [snap(0, 0.0, profile="v0.33"), snap(1, 0.25, running=2, profile="v0.33", rep=report(1, 40, 0.01))]
    fig = timeline_figure(history, 1)
    assert values(trace(fig, "device pool")) == [0, 25]
    names = {t.name for t in fig.data}
    assert "swapped" not in names and "CPU pool" not in names  # no SWAPPED queue, no CPU pool
    # V0's gauge name in a V1 snapshot is not read: the profile decides which name is the device pool's, and a
    # V1 snapshot without its own gauge is incomplete (an error, never a silent 0).
    wrong = dataclasses.replace(
        history[1], metrics={"vllm:gpu_cache_usage_perc": 0.9, "pykv:recomputed_tokens_total": 0.0}
    )
    with pytest.raises(MetricNotExportedError, match="vllm:kv_cache_usage_perc"):
        timeline_figure([wrong], 0)


def test_cpu_pool_without_a_gauge_is_counted_from_its_blocks():
    # A V1 profile exports no CPU gauge: 1 of 4 CPU blocks in use reads 25%.
    history = [snap(0, 0.0, profile="v0.10", cpu_blocks=4)]
    assert values(trace(timeline_figure(history, 0), "CPU pool")) == [25]


def test_an_unknown_profile_reads_whichever_gauge_it_exports():
    old = snap(0, 0.0, metrics={"vllm:gpu_cache_usage_perc": 0.5, "pykv:recomputed_tokens_total": 0.0}, profile="v9.9")
    new = snap(0, 0.0, metrics={"vllm:kv_cache_usage_perc": 0.25, "pykv:recomputed_tokens_total": 0.0}, profile="v9.9")
    assert values(trace(timeline_figure([old], 0), "device pool")) == [50]
    assert values(trace(timeline_figure([new], 0), "device pool")) == [25]


def test_throughput_names_the_device_it_was_measured_on(v0_history):
    history = v0_history[:2] + [
        dataclasses.replace(v0_history[2], report=dataclasses.replace(v0_history[2].report, device="cuda:0"))
    ]
    fig = timeline_figure(history, 0)
    titles = [a.text for a in fig.layout.annotations]
    assert "Throughput (tokens/s, measured on cuda:0)" in titles
    assert "measured on cuda:0" in trace(fig, "throughput").hovertemplate
    assert {
        "KV usage (%)",
        "Queues (requests)",
        "Preemptions, by mode",
        "Recomputed tokens (cumulative)",
        "Tokens per step",
    } <= set(titles)


def test_light_and_dark_templates(v0_history):
    light, dark = timeline_figure(v0_history, 1), timeline_figure(v0_history, 1, dark=True)
    assert light.layout.template.layout.paper_bgcolor == LIGHT["paper"]
    assert dark.layout.template.layout.paper_bgcolor == DARK["paper"]
    assert dark.layout.shapes[0].line.color == DARK["font"]
    assert timeline_figure(v0_history, 1, height=500).layout.height == 500


def test_a_long_history_stays_a_few_traces_with_one_shape():
    """3,000 steps: still one trace per series, one shape and one annotation per panel (no per-point
    objects), and the arrays go out as base64 (a few bytes a point)."""
    base = [snap(0, 0.0, waiting=4)] + [
        snap(
            i,
            (i % 10) / 10,
            running=2,
            recomputed=float(i),
            rep=report(i, 2, 0.01, [preemption(i, "1", "recompute")] if i % 100 == 0 else []),
            profile="v0.33",
        )
        for i in range(1, 3001)
    ]
    fig = timeline_figure(base, 1500)
    assert len(fig.data) <= 10 and len(fig.layout.shapes) == 6 and len(fig.layout.annotations) == 6
    assert list(trace(fig, "R = recompute").x) == list(range(100, 3001, 100))
    assert len(fig.to_json()) < 200_000
    assert isinstance(trace(fig, "running").y, np.ndarray)


def test_empty_history_draws_an_empty_timeline():
    fig = timeline_figure([], 0)
    assert fig.layout.shapes[0].x0 == 0 and fig.layout.title.text.startswith("Run timeline · step 0 of 0")


# ---- selected_step: st.plotly_chart's selection state -> the step clicked -----------------------------


def selection(*points):
    return {"selection": {"points": list(points), "point_indices": [], "box": [], "lasso": []}}


@pytest.mark.parametrize(
    "state, step",
    [
        (None, None),
        ({}, None),
        (selection(), None),
        (selection({"curve_number": 0, "point_index": 7, "x": 7, "y": 50.0}), 7),
        (selection({"x": 7.0}), 7),
        (selection({"x": 2, "customdata": 5}), 5),  # customdata, when a figure carries the step there, wins
        (selection({"customdata": [4, "req 1"], "x": 4}), 4),
        (selection({"x": 3}, {"x": 9}), 9),  # shift-click: the last point
        (selection({"x": 3}, {"x": "nine"}), 3),
        (selection({"x": -1}), None),
        (selection({"x": 2.5}), None),
        (selection({"x": True}), None),
        (selection({"x": float("nan")}), None),
        (selection({"x": float("inf")}), None),
        (selection("x"), None),
        ({"selection": {"points": "x"}}, None),
        ({"selection": None}, None),
        ([1, 2], None),
    ],
)
def test_selected_step(state, step):
    assert selected_step(state) == step


def test_selected_step_reads_streamlits_state_objects():
    """Streamlit returns dict subclasses with attribute access; they read like dicts."""

    class State(dict):
        __getattr__ = dict.__getitem__

    state = State(selection=State(points=[{"x": 12, "curve_number": 3}], point_indices=[12], box=[], lasso=[]))
    assert selected_step(state) == 12
