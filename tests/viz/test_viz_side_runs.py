"""The side-runs chart: one bar per run in each of three panels, values printed, the device named."""

from __future__ import annotations

import pytest

from pykv.viz.side_runs import PANELS, side_runs_figure

RUNS = {
    "short": {"preemptions": 3, "recomputed_tokens": 96, "wall_s": 0.41},
    "long": {"preemptions": 12, "recomputed_tokens": 640, "wall_s": 1.2},
}


@pytest.mark.parametrize("dark", [False, True])
def test_one_bar_per_run_per_panel_with_its_value(dark):
    fig = side_runs_figure(list(RUNS), RUNS, "cpu", dark=dark)
    assert len(fig.data) == len(PANELS)
    for trace, (field, label, _) in zip(fig.data, PANELS):
        assert list(trace.y) == ["short", "long"] and list(trace.x) == [RUNS[n][field] for n in RUNS]
        assert trace.name == label
    assert list(fig.data[0].text) == ["3", "12"] and list(fig.data[2].text) == ["0.41", "1.20"]
    assert "measured on cpu" in fig.layout.title.text
    assert fig.layout.xaxis2.domain[0] > fig.layout.xaxis.domain[1]  # side by side, not overlapping


def test_a_run_without_a_field_is_refused():
    with pytest.raises(ValueError, match="no wall_s"):
        side_runs_figure(["x"], {"x": {"preemptions": 1, "recomputed_tokens": 2}}, "cpu")


def test_each_panel_keeps_to_three_ticks_and_tokens_in_si():
    """A panel is ~110 px wide on a 720p projector: plotly's own ticks ran into each other there ("1 0")."""
    layout = side_runs_figure(list(RUNS), RUNS, "cpu").layout
    axes = [layout.xaxis, layout.xaxis2, layout.xaxis3]
    assert [a.nticks for a in axes] == [3, 3, 3]
    assert [a.tickformat for a in axes] == [None, "~s", None]  # a count of 1 preemption would tick "500m" in SI
