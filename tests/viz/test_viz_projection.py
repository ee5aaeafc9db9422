"""The projector's 1080p figures (pykv.viz.projection): every pixel quantity of a 720p figure times the scale, the
layout in data and paper units as it was, the figure it came from untouched; and the queue chart's badge key,
given the projector column's width, wraps instead of running past the edge."""

from __future__ import annotations

import pytest

from pykv.viz import block_grid_figure, queues_figure
from pykv.viz.projection import PROJECTOR_SCALE, projected


def sizes(fig) -> dict:
    spec = fig.to_plotly_json()
    layout = spec["layout"]
    return {
        "height": layout["height"],
        "margin": layout["margin"],
        "template font": layout["template"]["layout"]["font"]["size"],
        "title font": layout["template"]["layout"]["title"]["font"]["size"],
        "cell text": next(t["textfont"]["size"] for t in spec["data"] if "textfont" in t),
        "outlines": [s["line"]["width"] for s in layout.get("shapes", [])],
        "legend font": layout["annotations"][0]["font"]["size"],
        "legend shift": layout["annotations"][0]["yshift"],
    }


def test_a_projected_figure_is_the_same_figure_larger(snap):
    grid = block_grid_figure(snap, "gpu", {("gpu", 0)}, height=270)
    before = sizes(grid)
    big = projected(grid)
    x = PROJECTOR_SCALE
    assert 1.2 <= x <= 1.5  # 1080p over 720p is 1.5
    assert sizes(grid) == before  # pure
    after = sizes(big)
    assert after["height"] == round(270 * x)
    assert after["margin"] == {k: v * x for k, v in before["margin"].items()}
    for field in ("template font", "title font", "cell text", "legend font", "legend shift"):
        assert after[field] == pytest.approx(before[field] * x), field
    assert before["outlines"] and after["outlines"] == [w * x for w in before["outlines"]]
    spec, big_spec = grid.to_plotly_json(), big.to_plotly_json()
    assert [t.get("x") for t in big_spec["data"]] == [t.get("x") for t in spec["data"]]  # the cells stay put
    assert big_spec["layout"]["xaxis"]["range"] == spec["layout"]["xaxis"]["range"]
    assert [a["text"] for a in big_spec["layout"]["annotations"]] == [a["text"] for a in spec["layout"]["annotations"]]


def test_the_badge_key_wraps_in_a_narrow_column(snap):
    def key(fig):
        return fig.layout.annotations[-1].text

    assert "<br>" not in key(queues_figure(snap))  # width unknown: one line, as before
    assert "<br>" not in key(queues_figure(snap, width=600))
    assert "<br>" not in key(queues_figure(snap, width=270))  # the key has the figure's whole width, lane names too
    narrow = queues_figure(snap, width=230)
    assert key(narrow) == "badges: R2 = recomputed 2×,<br>S1 = swapped 1×"
    assert narrow.layout.margin.b > queues_figure(snap).layout.margin.b  # room for its second line
