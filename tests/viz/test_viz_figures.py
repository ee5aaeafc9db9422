"""Figure builders on fixed, hand-made snapshots: cell colours, ref-count text, outlines, queues."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest
from hand_made import block, request, snapshot

from pykv.border.snapshot import BlockView, diff_snapshots
from pykv.viz import REQUEST_PALETTE, block_grid_figure, block_tables_figure, queues_figure, request_color, template
from pykv.viz.blocks import grid_columns
from pykv.viz.theme import DARK, LIGHT, text_color_on, text_px


def heatmap(fig: go.Figure) -> go.Heatmap:
    return next(t for t in fig.data if isinstance(t, go.Heatmap))


def cell_colours(fig: go.Figure) -> list[str]:
    """The fill colour of each cell, row-major, read back through the discrete colour scale."""
    hm = heatmap(fig)
    scale = [c for _, c in hm.colorscale]
    k = hm.zmax or 1
    stops = {round(v * k): c for v, c in hm.colorscale}
    return [stops[z] if len(scale) > 1 else scale[0] for row in hm.z for z in row if z is not None]


def labels(fig: go.Figure) -> list[str]:
    """Cell labels, row-major, read from the text traces (black-ink and white-ink cells)."""
    hm = heatmap(fig)
    cols = len(hm.z[0])
    found = {}
    for t in fig.data:
        if isinstance(t, go.Scatter) and t.mode == "text":
            for x, y, text in zip(t.x, t.y, t.text):
                found[y * cols + x] = text
    return [found.get(r * cols + c, "") for r, row in enumerate(hm.z) for c, z in enumerate(row) if z is not None]


def test_labels_contrast_with_their_cells(snap):
    fig = block_grid_figure(snap, "gpu")
    inks = {t.textfont.color: list(t.text) for t in fig.data if isinstance(t, go.Scatter) and t.mode == "text"}
    assert inks["#000000"] == ["0"] and inks["#FFFFFF"] == ["1", "1", "2"]  # grey cached: black; magenta req 0: white
    s2 = snapshot([block(0, ref=1, owners=["4"], logical=[0])], [request("4", table=[0])])  # indigo #332288
    inks = {t.textfont.color: list(t.text) for t in block_grid_figure(s2, "gpu").data if isinstance(t, go.Scatter)}
    assert inks["#FFFFFF"] == ["1"] and inks["#000000"] == []


def test_request_colours_are_stable_and_from_the_palette():
    assert request_color("0") == REQUEST_PALETTE[0] and request_color("17") == REQUEST_PALETTE[1]
    assert request_color("m1") == request_color("m1") in REQUEST_PALETTE
    assert len(set(REQUEST_PALETTE)) == 16


def test_grid_cells_are_coloured_by_owner_and_state(snap):
    fig = block_grid_figure(snap, "gpu")
    colours = cell_colours(fig)
    assert colours[:3] == [request_color("0")] * 3  # the shared block takes its first owner's colour
    assert colours[3] == LIGHT["cached"] and colours[4:] == [LIGHT["free"]] * 4
    assert LIGHT["cached"] != LIGHT["free"]
    dark = cell_colours(block_grid_figure(snap, "gpu", dark=True))
    assert dark[3] == DARK["cached"] and dark[4] == DARK["free"]


def test_grid_prints_ref_counts_blank_for_free_and_zero_for_cached(snap):
    assert labels(block_grid_figure(snap, "gpu")) == ["1", "1", "2", "0", "", "", "", ""]


def test_grid_hover_names_block_owners_logical_index_hash_and_fill(snap):
    hover = heatmap(block_grid_figure(snap, "gpu")).customdata[0][2]
    assert "block 2" in hover and "req 0 (logical 2)" in hover and "req 1 (logical 0)" in hover
    assert "bbbbbbbbbbbb" in hover and "tokens filled: 16" in hover and "ref 2" in hover


def test_changed_cells_are_outlined(snap):
    before = snapshot([b if b.block_id != 1 else block(1) for b in snap.blocks], snap.requests, snap.queues)
    diff = diff_snapshots(before, snap)
    assert ("gpu", 1) in diff.blocks
    fig = block_grid_figure(snap, "gpu", diff.blocks)
    cols = grid_columns(8)
    outlined = {(round((s.x0 + s.x1) / 2), round((s.y0 + s.y1) / 2)) for s in fig.layout.shapes}
    assert outlined == {(1 % cols, 1 // cols)}
    assert fig.layout.shapes[0].line.color == LIGHT["outline"]
    assert not block_grid_figure(snap, "gpu").layout.shapes


def test_legend_lists_owners_and_block_states(snap):
    legend = block_grid_figure(snap, "gpu").layout.annotations[0].text
    assert legend.index("req 0") < legend.index("req 1") and f"color:{request_color('1')}" in legend
    for entry in ("free", "cached (ref 0, hash kept)", "changed this step"):
        assert entry in legend
    assert not block_grid_figure(snap, "cpu", legend=False).layout.annotations


def test_a_legend_wraps_to_the_width_the_grid_is_drawn_at():
    owners = [str(i) for i in range(12)]
    s = snapshot(
        [block(i, ref=1, owners=[o], logical=[0]) for i, o in enumerate(owners)],
        [request(o, table=[i]) for i, o in enumerate(owners)],
    )
    six = block_grid_figure(s, "gpu")  # the app's: six entries a line
    assert [line.count("</span>") for line in six.layout.annotations[0].text.split("<br>")] == [6, 6, 3]
    narrow = block_grid_figure(s, "gpu", width=345)  # a review pack's small multiple
    lines = narrow.layout.annotations[0].text.split("<br>")
    assert len(lines) > 3 and sum(line.count("</span>") for line in lines) == 15
    for line in lines:  # each within the plot's width, as estimated
        assert text_px(len(re.sub(r"<[^>]+>", "", line)), 11) <= 345 - 8, line
    assert narrow.layout.margin.b == 16 + 16 * len(lines) and narrow.layout.height > six.layout.height


def test_cpu_pool_grid_and_empty_pool():
    s = snapshot([block(0, ref=1, owners=["5"], logical=[0])], [request("5", table=[0])])
    assert "0/0" in block_grid_figure(s, "cpu").layout.title.text
    cpu = block_grid_figure(s, "gpu")
    assert cell_colours(cpu) == [request_color("5")] and "1/1 blocks used" in cpu.layout.title.text


def test_label_colour_contrasts_with_fill():
    assert text_color_on("#FFFFFF") == "#000000" and text_color_on("#332288") == "#FFFFFF"
    assert text_color_on("#F0E442") == "#000000"


def test_grid_layout_scales_with_pool_size():
    assert grid_columns(64) == 8 and grid_columns(256) == 16 and grid_columns(512) == 32 and grid_columns(9) == 3


def test_block_tables_map_logical_to_physical(snap):
    fig = block_tables_figure(snap)
    text = labels(fig)
    # rows: req 0 (3 blocks), req 1 (1 block), req 2 (1 CPU block); width 3
    assert text[:3] == ["0", "1", "2*"] and text[3:6] == ["2*", "", ""] and text[6] == "c0"
    assert list(fig.layout.yaxis.ticktext) == ["req 0", "req 1", "req 2 (CPU)"]


def test_queues_lanes_chips_and_preemption_badges(snap):
    fig = queues_figure(snap, changed={"1"})
    chips, badges = fig.data[0], fig.data[1]
    assert list(fig.layout.yaxis.ticktext) == ["WAITING (0)", "RUNNING (2)", "SWAPPED (1)", "FINISHED (1)"]
    assert list(chips.text) == ["0", "1", "2", "3"] and [round(y) for y in chips.y] == [1, 1, 2, 3]
    rects = chip_shapes(fig)
    assert [r.fillcolor for r in rects] == [request_color(r) for r in "0123"]
    assert list(badges.text) == ["S1"]  # req 2: preempted once, by swap
    assert (rects[1].line.color, rects[1].line.width) == (LIGHT["outline"], 2.5) and rects[0].line.width == 0


def chip_shapes(fig):
    return [s for s in fig.layout.shapes if s.xref != "paper"]


def test_queue_chips_never_overlap_each_other_or_the_lane_labels():
    """Chips are data-unit rectangles, so a gap in slots is a gap at any chart width, and the first chip starts
    right of the axis (20 px markers on a 1280x720 projector's ~14 px slots stacked on each other and on the lane
    label "RUNNING (16)")."""
    fig = queues_figure(snapshot([], [request(str(i)) for i in range(16)]))
    lane = sorted((s for s in chip_shapes(fig) if s.y0 < 1 < s.y1), key=lambda s: s.x0)
    assert len(lane) == 16
    assert all(b.x0 - a.x1 > 0.1 for a, b in zip(lane, lane[1:]))
    x_low, x_high = fig.layout.xaxis.range
    assert lane[0].x0 > x_low and lane[-1].x1 < x_high


def test_every_figure_uses_the_project_template_in_both_themes(snap):
    for dark in (False, True):
        for fig in (
            block_grid_figure(snap, dark=dark),
            block_tables_figure(snap, dark=dark),
            queues_figure(snap, dark=dark),
        ):
            assert fig.layout.template.layout.paper_bgcolor == template(dark).layout.paper_bgcolor
            assert fig.layout.template.layout.font.color == (DARK if dark else LIGHT)["font"]


def test_v1_null_block_is_shown_reserved():
    """vLLM V1 keeps block 0 back as its null block (0.10.2 and 0.33.0 vllm/v1/core/block_pool.py
    BlockPool.__init__): the grid marks it, and counts the usable blocks only."""
    null = BlockView(0, "gpu", 0, [], [], None, 0, "null", None)
    s = snapshot([null, block(1, ref=1, owners=["0"], logical=[0]), block(2), block(3)], [request("0", table=[1])])
    fig = block_grid_figure(s, "gpu")
    assert labels(fig) == ["∅", "1", "", ""]
    assert fig.layout.title.text.endswith("· 1/3 blocks used")  # the usable ones; the null block is not counted
    assert "null block (not counted)" in fig.layout.annotations[0].text
    assert "null block" in heatmap(fig).customdata[0][0]
    assert "null block" not in block_grid_figure(snapshot([block(0)], []), "gpu").layout.annotations[0].text


def test_engine_snapshots_mark_block_0_null_under_v1_only(make_engine):
    for profile, state in (("v0.33", "null"), ("v0.10", "null"), ("v0.6", "free")):
        snap = make_engine(vllm_profile=profile, block_size=4, num_gpu_blocks=4).snapshot()
        assert snap.block("gpu", 0).state == state, profile


@pytest.mark.parametrize("dark", [False, True])
def test_a_figure_the_app_serves_unvalidated_is_the_figure_the_tests_validate(snap, monkeypatch, dark):
    """The app skips plotly's validation for speed (pykv.viz.theme.figure): what reaches the browser is the same,
    but for the empty lists validation drops (``shapes: []``)."""
    import json

    import plotly.io as pio

    def pruned(value):
        if isinstance(value, dict):
            return {k: pruned(v) for k, v in value.items() if v != []}
        return [pruned(v) for v in value] if isinstance(value, list) else value

    def drawn(validate: str) -> list[dict]:
        monkeypatch.setenv("PYKV_VALIDATE_FIGURES", validate)
        figures = (
            block_grid_figure(snap, "gpu", dark=dark),
            block_tables_figure(snap, dark=dark),
            queues_figure(snap, dark=dark),
        )
        return [pruned(json.loads(pio.to_json(f, validate=False))) for f in figures]

    assert drawn("0") == drawn("1")
