"""Two token sequences side by side: where they diverge, and how many full KV blocks they share.

Prefix caching reuses a block only if *every* token before it and in it matches, so one changed
character early in a prompt (it changes a token) costs every block after it. The figure lays the two
sequences out as row pairs, ``per_row`` tokens wide (a multiple of ``block_size``, so block
boundaries are vertical lines)::

    position:   0   1   2   3 | 4   5   6   7        per_row = 8, block_size = 4
        a:     def  ·f  oo  (  | x   )   :
        b:     def  ·f  oo  (  | y   )   :          first difference at 4: 1 full block shared
                                 ^ outlined

Cells in the common prefix are neutral; from the first difference on, each sequence has its own
accent colour (and the first differing cells an outline), so colour is never the only cue.
Pure functions: no Streamlit.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from pykv.viz.theme import CHAR_EM, FONT_PX, colors, figure, text_color_on, text_px, tick_label_margin, title_px

ACCENTS = ("#E69F00", "#56B4E9")  # Okabe-Ito orange (a), sky blue (b)
PIECE_FONT_PX = 10
PIECE_CHARS = 6  # a piece's characters in its cell, where the figure's width is not known
FRAME_COLUMNS = ["position", "a token", "a piece", "b token", "b piece", "same", "in common prefix"]


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first position where the sequences differ (a length mismatch counts); None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    diff = first_difference(a, b)
    return len(a) if diff is None else diff


def full_blocks_shared(a: Sequence[int], b: Sequence[int], block_size: int) -> int:
    """Full blocks whose tokens (and every token before them) match: what prefix caching could reuse."""
    return common_prefix(a, b) // block_size


def show_piece(piece: str | None, width: int = 6) -> str:
    """A decoded piece made visible: space as ·, newline as ↵, tab as →; long pieces cut with …."""
    if piece is None:
        return ""
    text = piece.replace(" ", "·").replace("\n", "↵").replace("\t", "→")
    return text if len(text) <= width else text[: width - 1] + "…"


def _pieces(ids: Sequence[int], pieces: Sequence[str] | None) -> list[str]:
    return list(pieces) if pieces is not None and len(pieces) == len(ids) else [str(t) for t in ids]


def token_diff_frame(
    a: Sequence[int], b: Sequence[int], a_pieces: Sequence[str] | None = None, b_pieces: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per position (the longer sequence's length); a missing token is None."""
    pa, pb = _pieces(a, a_pieces), _pieces(b, b_pieces)
    prefix = common_prefix(a, b)
    rows = []
    for i in range(max(len(a), len(b))):
        ta, tb = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        rows.append(
            [
                i,
                ta,
                pa[i] if i < len(a) else None,
                tb,
                pb[i] if i < len(b) else None,
                ta is not None and ta == tb,
                i < prefix,
            ]
        )
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    return frame.astype({"a token": "Int64", "b token": "Int64"})


def token_diff_figure(
    a: Sequence[int],
    b: Sequence[int],
    a_pieces: Sequence[str] | None = None,
    b_pieces: Sequence[str] | None = None,
    *,
    block_size: int | None = None,
    labels: tuple[str, str] = ("a", "b"),
    dark: bool = False,
    height: int | None = None,
    per_row: int | None = None,
    title: str | None = None,
    width: int | None = None,
    floor_px: float | None = None,
) -> go.Figure:
    """The two sequences as row pairs; block boundaries (if ``block_size``) as dotted lines. ``width``: the px it is
    drawn at, where known (the projector's column): a piece is cut to what its cell holds and a long title takes two
    lines; ``floor_px``: its smallest text (the projector's floor), else 10 px in the cells."""
    c = colors(dark)
    n = max(len(a), len(b))
    diff = first_difference(a, b)
    prefix = common_prefix(a, b)
    if per_row is None:
        per_row = block_size * max(1, 16 // block_size) if block_size else 16
    per_row = max(1, per_row)
    chunks = max(1, math.ceil(n / per_row))
    if title is None:
        where = f"identical ({n} tokens)" if diff is None else f"first difference at token {diff}"
        title = f"Token diff · {where}"
        if block_size:
            shared = prefix // block_size
            title += f" · {shared} full block{'' if shared == 1 else 's'} shared (block_size {block_size})"
    height = height or 70 + chunks * 70
    piece_px, label_px = max(PIECE_FONT_PX, floor_px or 0), max(FONT_PX, floor_px or 0)
    tickvals = [k * 3 + s for k in range(chunks) for s in (0, 1)]
    ticktext = [f"{labels[s]} {k * per_row}–{min(n, (k + 1) * per_row) - 1}" for k in range(chunks) for s in (0, 1)]
    left = max(64, tick_label_margin(ticktext, label_px))
    chars = PIECE_CHARS
    if width is not None:
        cell_px = (width - left - 8) / (per_row + 0.2)
        chars = max(2, int(0.9 * cell_px / (CHAR_EM * piece_px)))
        if " · " in title and text_px(len(title), title_px(floor_px)) > width - 16:  # plotly never wraps a title
            head, _, tail = title.rpartition(" · ")
            title = f"{head}<br>{tail}"

    fills, texts, hovers, xs, ys, firsts = [], [], [], [], [], []
    sides = ((a, _pieces(a, a_pieces), labels[0]), (b, _pieces(b, b_pieces), labels[1]))
    for s, (ids, pieces, name) in enumerate(sides):
        other = b if s == 0 else a
        for i, tok in enumerate(ids):
            same = i < len(other) and other[i] == tok
            fills.append(c["cached"] if i < prefix else ACCENTS[s])
            texts.append(show_piece(pieces[i], chars))
            hovers.append(
                f"<b>{name}</b> token {i}: id {tok}<br>piece {pieces[i]!r}<br>"
                + ("in the common prefix" if i < prefix else "same id as the other" if same else "differs")
            )
            xs.append(i % per_row)
            ys.append((i // per_row) * 3 + s)
            if i == diff:
                firsts.append((xs[-1], ys[-1]))

    rows = chunks * 3 - 1  # a row pair per chunk, a blank row between pairs
    palette = sorted(set(fills)) or [c["free"]]
    index = {f: j for j, f in enumerate(palette)}
    z: list[list[int | None]] = [[None] * per_row for _ in range(rows)]
    hover = [[""] * per_row for _ in range(rows)]
    for j, fill in enumerate(fills):
        z[ys[j]][xs[j]], hover[ys[j]][xs[j]] = index[fill], hovers[j]
    k = max(1, len(palette) - 1)  # value j maps exactly to palette[j]
    scale = [[j / k, f] for j, f in enumerate(palette)] if len(palette) > 1 else [[0, palette[0]], [1, palette[0]]]
    data: list[dict] = [
        dict(
            type="heatmap",
            z=z,
            zmin=0,
            zmax=k,
            colorscale=scale,
            showscale=False,
            xgap=2,
            ygap=2,
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            name="tokens",
        )
    ]
    for ink in ("#000000", "#FFFFFF"):
        cells = [j for j, f in enumerate(fills) if texts[j] and text_color_on(f) == ink]
        data.append(
            dict(
                type="scatter",
                mode="text",
                x=[xs[j] for j in cells],
                y=[ys[j] for j in cells],
                text=[texts[j] for j in cells],
                textfont=dict(color=ink, size=piece_px),
                hoverinfo="skip",
                showlegend=False,
                name="pieces",
            )
        )
    shapes = [
        dict(
            type="rect",
            x0=x - 0.46,
            x1=x + 0.46,
            y0=y - 0.42,
            y1=y + 0.42,
            layer="above",
            line=dict(color=c["outline"], width=2.5),
        )
        for x, y in firsts
    ]
    if block_size:
        shapes += [
            dict(
                type="line",
                x0=x - 0.5,
                x1=x - 0.5,
                y0=-0.5,
                y1=rows - 0.5,
                line=dict(color=c["muted"], width=1, dash="dot"),
            )
            for x in range(block_size, per_row, block_size)
        ]
    annotations = [] if n else [dict(text="no tokens", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")]
    return figure(
        title,
        height,
        dark,
        data,
        shapes=shapes,
        annotations=annotations,
        xaxis=dict(visible=False, fixedrange=True, range=[-0.6, per_row - 0.4]),
        yaxis=dict(
            autorange="reversed",
            fixedrange=True,
            tickvals=tickvals,
            ticktext=ticktext,
            showgrid=False,
            zeroline=False,
            ticks="",
            showline=False,
        ),
        margin=dict(
            l=left,
            r=8,
            t=round(40 * title_px(floor_px) / title_px(None) + 1.3 * title_px(floor_px) * title.count("<br>")),
            b=8,
        ),
        floor_px=floor_px,
    )
