r"""The kernel view: one program of one attention-kernel launch, drawn over the device KV pool.

Top: the pool's block grid with the blocks the program read (the store: wrote) numbered in the
order it reached them through the block table; the rest dimmed. Bottom: the request's key
positions as the program walked them::

    positions  0 ........ causal_from ........ key_stop | .. tile end
               | cached prefix | causal diagonal (chunk) | masked tail
    tiles      |<-- BLOCK_N -->|<-- BLOCK_N -->|...      (vertical lines)
    blocks     |  b0  |  b1  |  b2  | ...                 block_size positions each

Pure functions of a Snapshot and a :class:`KernelWalk` (which the UI builds from the engine's launch
record); no Streamlit, no engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from pykv.border.snapshot import Snapshot
from pykv.viz.blocks import HIDDEN_AXIS, grid_columns
from pykv.viz.theme import colors, figure, request_color, text_color_on

PREFIX_FILL, DIAGONAL_FILL = "#56B4E9", "#E69F00"


@dataclass(frozen=True)
class Tile:
    start: int  # first key position of the tile
    stop: int  # one past the last position read; stop .. start + width - 1 is the masked tail
    width: int  # BLOCK_N


@dataclass(frozen=True)
class KernelWalk:
    """What one program did for one request (or, for the store, for a run of tokens)."""

    title: str  # "decode · req 3 · KV head 1"
    request_id: str | None  # colours the cells; None: several requests (the store)
    blocks: tuple[int, ...]  # physical blocks in the order the program reached them
    block_size: int
    key_start: int  # first key position walked (a split's start)
    key_stop: int  # one past the last key position walked (0: the store, which walks no keys)
    causal_from: int | None  # keys from here on were masked causally (a chunk's diagonal); None: no diagonal
    tiles: tuple[Tile, ...]
    writes: bool = False  # the store: blocks written, not read


def kernel_walk_figure(snapshot: Snapshot, walk: KernelWalk, dark: bool = False) -> go.Figure:
    """The pool grid with the walk's blocks numbered in order, and (attention) its key positions and tiles."""
    c = colors(dark)
    pool = [b for b in snapshot.blocks if b.pool == "gpu"]
    cols = grid_columns(len(pool))
    rows = max(1, math.ceil(len(pool) / cols))
    order = {b: i + 1 for i, b in reversed(list(enumerate(walk.blocks)))}  # first visit wins
    fill = request_color(walk.request_id) if walk.request_id is not None else "#0072B2"
    ink = text_color_on(fill)
    xs, ys, texts, hovers = [], [], [], []
    shapes = []
    for b in pool:
        x, y = b.block_id % cols, b.block_id // cols
        hit = b.block_id in order
        shapes.append(
            dict(
                type="rect",
                x0=x - 0.45,
                x1=x + 0.45,
                y0=y - 0.45,
                y1=y + 0.45,
                line=dict(width=0),
                fillcolor=fill if hit else c["free"],
                xref="x",
                yref="y",
                layer="below",
            )
        )
        xs.append(x)
        ys.append(y)
        texts.append(str(order[b.block_id]) if hit else "")
        verb = "written" if walk.writes else "read"
        hovers.append(
            f"block {b.block_id}: {verb} {order[b.block_id]}{_nth(order[b.block_id])}"
            if hit
            else f"block {b.block_id}: not touched by this program"
        )
    data = [
        dict(
            type="scatter",
            mode="text",
            x=xs,
            y=ys,
            text=texts,
            textfont=dict(color=ink, size=12),
            hovertext=hovers,
            hoverinfo="text",
            showlegend=False,
            xaxis="x",
            yaxis="y",
        )
    ]
    layout: dict[str, Any] = dict(
        xaxis=dict(HIDDEN_AXIS, range=[-0.6, cols - 0.4], domain=[0, 1]),
        yaxis=dict(HIDDEN_AXIS, range=[rows - 0.4, -0.6], domain=[0.42 if walk.key_stop else 0, 1]),
    )
    height = 60 + 34 * rows
    if walk.key_stop:
        strip, strip_shapes, end = _positions_strip(walk, c)
        data += strip
        shapes += strip_shapes
        layout["xaxis2"] = dict(
            range=[-0.5, end + 0.5],
            domain=[0, 1],
            title=dict(text="key position", standoff=6),
            fixedrange=True,
            anchor="y2",
            showgrid=False,
        )
        layout["margin"] = dict(l=16, r=16, t=36, b=54)  # room for the tick labels and, below them, the title
        layout["yaxis2"] = dict(HIDDEN_AXIS, range=[-1.6, 1.2], domain=[0, 0.3], anchor="x2")
        height += 150 + 46
    verb = "written" if walk.writes else "read"
    title = f"{walk.title}: {len(walk.blocks)} block(s) {verb}, numbered in the order reached"
    return figure(title, height, dark, data, shapes=shapes, **layout)


def _positions_strip(walk: KernelWalk, c: dict[str, str]) -> tuple[list[dict], list[dict], int]:
    """Key positions as bars per block (prefix / diagonal colours), tile lines and the masked tail."""
    end = max((t.start + t.width for t in walk.tiles), default=walk.key_stop)
    shapes, data = [], []
    first_block = walk.key_start // walk.block_size
    for i, block in enumerate(walk.blocks):
        lo = max(walk.key_start, (first_block + i) * walk.block_size)
        hi = min(walk.key_stop, (first_block + i + 1) * walk.block_size)
        for a, b, color in _split(lo, hi, walk.causal_from):
            shapes.append(
                dict(
                    type="rect",
                    x0=a - 0.5,
                    x1=b - 0.5,
                    y0=0,
                    y1=1,
                    xref="x2",
                    yref="y2",
                    fillcolor=color,
                    line=dict(color=c["paper"], width=1),
                    layer="below",
                )
            )  # under "b3"
        data.append(
            dict(
                type="scatter",
                mode="text",
                x=[(lo + hi - 1) / 2],
                y=[0.5],
                text=[f"b{block}"],
                textfont=dict(size=10, color="#000000"),
                hoverinfo="text",
                xaxis="x2",
                yaxis="y2",
                hovertext=[f"block {block}: positions {lo}..{hi - 1}"],
                showlegend=False,
            )
        )
    for t in walk.tiles:
        shapes.append(
            dict(
                type="line",
                x0=t.start - 0.5,
                x1=t.start - 0.5,
                y0=-1.2,
                y1=1.15,
                xref="x2",
                yref="y2",
                line=dict(color=c["font"], width=1.5),
            )
        )
        if t.stop < t.start + t.width:
            shapes.append(
                dict(
                    type="rect",
                    x0=t.stop - 0.5,
                    x1=t.start + t.width - 0.5,
                    y0=0,
                    y1=1,
                    xref="x2",
                    yref="y2",
                    fillcolor=c["free"],
                    line=dict(color=c["muted"], width=1, dash="dot"),
                )
            )
        data.append(
            dict(
                type="scatter",
                mode="text",
                x=[t.start + t.width / 2 - 0.5],
                y=[-0.6],
                xaxis="x2",
                yaxis="y2",
                text=[f"tile {t.start}..{t.stop - 1}" + (" + masked" if t.stop < t.start + t.width else "")],
                textfont=dict(size=10, color=c["muted"]),
                hoverinfo="skip",
                showlegend=False,
            )
        )
    return data, shapes, end


def _split(lo: int, hi: int, causal_from: int | None) -> list[tuple[int, int, str]]:
    if causal_from is None or causal_from >= hi:
        return [(lo, hi, PREFIX_FILL)]
    if causal_from <= lo:
        return [(lo, hi, DIAGONAL_FILL)]
    return [(lo, causal_from, PREFIX_FILL), (causal_from, hi, DIAGONAL_FILL)]


def _nth(n: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(n if n < 20 else n % 10, "th")
