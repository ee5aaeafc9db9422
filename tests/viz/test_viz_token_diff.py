"""The token diff (lesson 12's `tokenize` action): where two token sequences diverge, and what prefix
caching could share. Pure functions, no Streamlit."""

from __future__ import annotations

import plotly.graph_objects as go

from pykv.viz import template, token_diff_figure, token_diff_frame
from pykv.viz.theme import DARK, LIGHT
from pykv.viz.token_diff import ACCENTS, common_prefix, first_difference, full_blocks_shared, show_piece

A = [5, 6, 7, 8, 9, 10, 11, 12, 13]
B = [5, 6, 7, 8, 9, 99, 11, 12]
A_PIECES = ["def", " f", "oo", "(", "x", ")", ":", "\n", " "]
B_PIECES = ["def", " f", "oo", "(", "x", "y", ":", "\n"]


def heatmap(fig: go.Figure) -> go.Heatmap:
    return next(t for t in fig.data if isinstance(t, go.Heatmap))


def cell_fills(fig: go.Figure) -> dict[tuple[int, int], str]:
    """(row, col) -> fill colour, read back through the discrete colour scale."""
    hm = heatmap(fig)
    k = hm.zmax or 1
    stops = {round(v * k): c for v, c in hm.colorscale}
    return {(r, c): stops[z] for r, row in enumerate(hm.z) for c, z in enumerate(row) if z is not None}


def cell_texts(fig: go.Figure) -> dict[tuple[int, int], str]:
    return {(y, x): t for tr in fig.data if isinstance(tr, go.Scatter) for x, y, t in zip(tr.x, tr.y, tr.text)}


def test_first_difference_prefix_and_shared_blocks():
    assert first_difference(A, B) == 5 and common_prefix(A, B) == 5
    assert full_blocks_shared(A, B, 4) == 1 and full_blocks_shared(A, B, 2) == 2 and full_blocks_shared(A, B, 8) == 0
    assert first_difference(A, A) is None and common_prefix(A, A) == len(A)
    assert first_difference(A[:4], A) == 4  # one is a prefix of the other: they differ where it ends
    assert first_difference([], []) is None and first_difference([], [1]) == 0


def test_frame_has_one_row_per_position_of_the_longer_sequence():
    frame = token_diff_frame(A, B, A_PIECES, B_PIECES)
    assert len(frame) == 9 and list(frame["position"]) == list(range(9))
    assert list(frame["same"]) == [True] * 5 + [False, True, True, False]
    assert list(frame["in common prefix"]) == [True] * 5 + [False] * 4
    assert frame.loc[8, "b token"] is __import__("pandas").NA and frame.loc[8, "a piece"] == " "
    assert frame.loc[5, "a token"] == 10 and frame.loc[5, "b piece"] == "y"
    # no pieces given: the ids stand in for them
    assert token_diff_frame([1, 2], [1, 3])["a piece"].tolist() == ["1", "2"]


def test_figure_colours_prefix_neutral_and_each_side_its_accent_after_the_difference():
    fig = token_diff_figure(A, B, A_PIECES, B_PIECES, block_size=4, per_row=8)
    fills = cell_fills(fig)
    # 9 tokens at 8 per row: a in rows 0 and 3, b in rows 1 and 4 (row 2 is the gap between pairs)
    assert len(fills) == 9 + 8 and (2, 0) not in fills
    assert fills[(0, 0)] == fills[(1, 4)] == LIGHT["cached"]  # common prefix: neutral, both sides
    assert fills[(0, 5)] == fills[(0, 6)] == fills[(3, 0)] == ACCENTS[0]  # a from the first difference on
    assert fills[(1, 5)] == fills[(1, 7)] == ACCENTS[1]
    texts = cell_texts(fig)
    assert texts[(0, 1)] == "·f" and texts[(0, 7)] == "↵" and texts[(1, 5)] == "y"
    # the first differing cells are outlined (colour is not the only cue); block boundaries drawn
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert sorted((r.y0 + r.y1) / 2 for r in rects) == [0, 1] and all((r.x0 + r.x1) / 2 == 5 for r in rects)
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert [line.x0 for line in lines] == [3.5]
    title = fig.layout.title.text
    assert "first difference at token 5" in title and "1 full block shared (block_size 4)" in title


def test_figure_uses_the_project_template_in_both_themes_and_handles_edge_cases():
    light, dark = token_diff_figure(A, B), token_diff_figure(A, B, dark=True)
    assert light.layout.template == template(False) and dark.layout.template == template(True)
    assert cell_fills(dark)[(0, 0)] == DARK["cached"]
    same = token_diff_figure(A, A, A_PIECES, A_PIECES, block_size=4)
    assert "identical" in same.layout.title.text and "2 full blocks shared" in same.layout.title.text
    assert not [s for s in same.layout.shapes if s.type == "rect"]
    empty = token_diff_figure([], [])
    assert empty.layout.annotations[0].text == "no tokens"
    default_rows = token_diff_figure(list(range(40)), list(range(40)), block_size=16)
    assert len(heatmap(default_rows).z[0]) == 16  # per_row defaults to a multiple of block_size


def test_show_piece_makes_whitespace_visible_and_cuts_long_pieces():
    assert show_piece(" x\t\n") == "·x→↵" and show_piece("abcdefghij") == "abcde…" and show_piece(None) == ""
