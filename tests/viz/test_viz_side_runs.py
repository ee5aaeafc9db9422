"""The side-runs chart: one bar per run in each of three panels, values printed, the device named."""

from __future__ import annotations

import re

import pytest

from pykv.viz.side_runs import LABEL_GAP_PX, PANELS, side_runs_figure
from pykv.viz.theme import text_px

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
    assert "measured on cpu" in fig.layout.title.subtitle.text
    assert fig.layout.xaxis2.domain[0] > fig.layout.xaxis.domain[1]  # side by side, not overlapping


def test_a_run_without_a_field_is_refused():
    with pytest.raises(ValueError, match="no wall_s"):
        side_runs_figure(["x"], {"x": {"preemptions": 1, "recomputed_tokens": 2}}, "cpu")


def axes(fig) -> list:
    return [fig.layout.xaxis, fig.layout.xaxis2, fig.layout.xaxis3]


@pytest.mark.parametrize("preemptions", [0, 1, 3, 12])
def test_counts_tick_whole_numbers_without_si_suffixes(preemptions):
    """Lesson 3's projector ticked "0 0.5 1 0 500m 1": a count is whole, and never "500m" or "1.2k"."""
    runs = {"roomy": {"preemptions": preemptions, "recomputed_tokens": 1234, "wall_s": 0.32}}
    preempted, tokens, wall = axes(side_runs_figure(list(runs), runs, "cpu"))
    for axis in (preempted, tokens):
        assert axis.tickmode == "array" and len(axis.tickvals) == 2  # 0 and the axis's end: nothing to collide
        assert all(v == int(v) for v in axis.tickvals) and axis.tickvals[-1] >= 1
        assert all(re.fullmatch(r"\d[\d,]*", t) for t in axis.ticktext), axis.ticktext
        assert list(axis.range) == [0, axis.tickvals[-1]]
    assert preempted.tickvals[-1] >= preemptions and list(tokens.ticktext) == ["0", "2,000"]
    assert list(wall.ticktext) == ["0", "0.5"]


@pytest.mark.parametrize("names", [["roomy"], ["short", "long"], ["chunked", "whole", "chunked_cached_too"]])
def test_the_panels_ticks_and_titles_stay_apart_on_a_720p_projector(names):
    """At the projector's 340 px, each panel's end tick ends LABEL_GAP_PX before the next panel's "0" and the axis
    titles under them do not meet (estimated as the figure lays them out: theme.text_px)."""
    runs = {n: {"preemptions": 12, "recomputed_tokens": 1640, "wall_s": 10.25} for n in names}
    width, font = 340, 14
    fig = side_runs_figure(names, runs, "cpu", width=width, floor_px=font)
    margin = fig.layout.margin
    plot = width - margin.l - margin.r

    def half(text: str) -> float:
        return max(text_px(len(line), font) for line in text.split("<br>")) / 2

    for left, right in zip(axes(fig), axes(fig)[1:]):
        end, start = left.domain[1] * plot, right.domain[0] * plot
        assert start - end - half(left.ticktext[-1]) - half(right.ticktext[0]) >= LABEL_GAP_PX - 0.5
        mid_left, mid_right = sum(left.domain) / 2 * plot, sum(right.domain) / 2 * plot
        assert mid_right - mid_left >= half(left.title.text) + half(right.title.text)


def test_a_long_run_name_breaks_at_its_underscores():
    runs = {n: {"preemptions": 1, "recomputed_tokens": 2, "wall_s": 0.1} for n in ("whole", "chunked_cached")}
    yaxis = side_runs_figure(list(runs), runs, "cpu").layout.yaxis
    assert list(yaxis.tickvals) == ["whole", "chunked_cached"]
    assert list(yaxis.ticktext) == ["whole", "chunked_<br>cached"]
