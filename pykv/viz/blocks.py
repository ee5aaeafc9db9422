"""The block grid (one cell per physical block of a pool) and the block tables (per request,
logical block -> physical block). Pure functions of a Snapshot.

Grid layout: blocks fill rows left to right, top to bottom::

    block_id:  0  1  2  3  4  5  6  7        row = block_id // cols
               8  9 10 11 12 13 14 15        col = block_id %  cols

A cell's fill says who owns it (the first owner's colour; shared blocks print ref > 1), its text
the reference count: blank = free, "0" = free but cached (hash kept, reusable), "1".. = used.
Cells in ``changed`` get an outline in the theme's outline colour.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional

import plotly.graph_objects as go

from pykv.snapshot import BlockView, Snapshot
from pykv.viz.theme import base_figure, colors, request_color, text_color_on

POOL_TITLES = {"gpu": "Device KV pool", "cpu": "CPU swap pool"}


def grid_columns(num_blocks: int) -> int:
    """Columns of the grid: 8 up to 64 blocks, 16 up to 256, 32 beyond; at most ceil(sqrt(n)) below 16."""
    if num_blocks <= 16:
        return max(1, math.ceil(math.sqrt(num_blocks)))
    return 8 if num_blocks <= 64 else 16 if num_blocks <= 256 else 32


def cell_fill(block: BlockView, dark: bool = False) -> str:
    c = colors(dark)
    if block.state == "used" and block.owners:
        return request_color(block.owners[0])
    return c["cached"] if block.state == "cached" else c["free"]


def cell_text(block: BlockView) -> str:
    return "" if block.state == "free" else str(block.ref_cnt)


def block_hover(block: BlockView, pool_name: str) -> str:
    owners = ", ".join(f"req {o} (logical {i})" for o, i in zip(block.owners, block.logical_index)) or "none"
    lines = [
        f"<b>block {block.block_id}</b> · {pool_name}",
        f"state: {block.state} · ref {block.ref_cnt}",
        f"owners: {owners}",
        f"tokens filled: {block.tokens_filled}",
        f"hash: {block.block_hash[:12] + '…' if block.block_hash else '—'}",
    ]
    if block.free_queue_position is not None:
        lines.append(f"free queue position: {block.free_queue_position} (0 = evicted first)")
    return "<br>".join(lines)


def _legend_entry(fig: go.Figure, name: str, fill: str, outline: Optional[str] = None, group: str = "") -> None:
    marker = dict(symbol="square", size=13, color=fill, line=dict(width=2 if outline else 0, color=outline or fill))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", marker=marker, name=name, legendgroup=group,
                             showlegend=True, hoverinfo="skip"))


def _grid(fig: go.Figure, fills: list[str], texts: list[str], hovers: list[str], cols: int, name: str) -> None:
    """Draw cells i = 0..n-1 at (i % cols, i // cols) as a heatmap (fills) + a text trace (labels)."""
    n = len(fills)
    rows = max(1, math.ceil(n / cols))
    palette = sorted(set(fills))
    index = {f: i for i, f in enumerate(palette)}
    z = [[None] * cols for _ in range(rows)]
    hover = [[""] * cols for _ in range(rows)]
    for i, (fill, text) in enumerate(zip(fills, hovers)):
        z[i // cols][i % cols] = index[fill]
        hover[i // cols][i % cols] = text
    # A discrete colour scale: value k maps exactly to palette[k].
    k = max(1, len(palette) - 1)
    scale = [[i / k, f] for i, f in enumerate(palette)] if len(palette) > 1 else [[0, palette[0]], [1, palette[0]]]
    fig.add_trace(go.Heatmap(
        z=z, zmin=0, zmax=k, colorscale=scale, showscale=False, xgap=2, ygap=2, customdata=hover,
        hovertemplate="%{customdata}<extra></extra>", name=name, showlegend=False,
    ))
    fig.add_trace(go.Scatter(
        x=[i % cols for i in range(n)], y=[i // cols for i in range(n)], mode="text", text=texts,
        textfont=dict(color=[text_color_on(f) for f in fills], size=11), hoverinfo="skip", showlegend=False,
        name=f"{name} labels",
    ))
    fig.update_xaxes(visible=False, range=[-0.5, cols - 0.5], fixedrange=True)
    fig.update_yaxes(visible=False, range=[rows - 0.5, -0.5], fixedrange=True)


def outline_shapes(cells: Iterable[int], cols: int, color: str) -> list[dict]:
    return [
        dict(type="rect", x0=i % cols - 0.47, x1=i % cols + 0.47, y0=i // cols - 0.47, y1=i // cols + 0.47,
             line=dict(color=color, width=2.5), fillcolor="rgba(0,0,0,0)", layer="above")
        for i in sorted(cells)
    ]


def block_grid_figure(snapshot: Snapshot, pool: str = "gpu", changed: Optional[set[tuple[str, int]]] = None,
                      dark: bool = False, height: Optional[int] = None, legend: bool = True) -> go.Figure:
    """One cell per physical block of ``pool``; ``changed`` = (pool, block id) pairs to outline."""
    blocks = sorted((b for b in snapshot.blocks if b.pool == pool), key=lambda b: b.block_id)
    used = sum(b.state == "used" for b in blocks)
    title = f"{POOL_TITLES.get(pool, pool)} · {used}/{len(blocks)} blocks used"
    cols = grid_columns(len(blocks)) if blocks else 1
    rows = max(1, math.ceil(len(blocks) / cols))
    fig = base_figure(title, height or max(160, min(520, 60 + rows * 26 + (70 if legend else 0))), dark)
    if not blocks:
        fig.add_annotation(text="no blocks in this pool", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return fig
    name = POOL_TITLES.get(pool, pool)
    _grid(fig, [cell_fill(b, dark) for b in blocks], [cell_text(b) for b in blocks],
          [block_hover(b, name) for b in blocks], cols, name)
    c = colors(dark)
    marked = [b.block_id for b in blocks if changed and (pool, b.block_id) in changed]
    fig.update_layout(shapes=outline_shapes(marked, cols, c["outline"]))
    if legend:
        owners = sorted({o for b in blocks for o in b.owners}, key=lambda r: (not r.isdigit(), int(r) if r.isdigit() else 0, r))
        for owner in owners:
            _legend_entry(fig, f"req {owner}", request_color(owner))
        _legend_entry(fig, "free", c["free"], outline=c["grid"])
        _legend_entry(fig, "cached (ref 0, hash kept)", c["cached"])
        _legend_entry(fig, "changed this step", "rgba(0,0,0,0)", outline=c["outline"])
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.02, x=0, font=dict(size=11),
                                      itemclick=False, itemdoubleclick=False))
    fig.update_layout(showlegend=legend, margin=dict(l=4, r=4, t=30, b=4))
    return fig


def block_tables_figure(snapshot: Snapshot, dark: bool = False, changed_requests: Optional[set[str]] = None) -> go.Figure:
    """Rows = requests holding blocks; column j = logical block j; cell text = physical block id."""
    holders = [r for r in snapshot.requests if r.block_table]
    width = max((len(r.block_table) for r in holders), default=1)
    fig = base_figure("Block tables · logical block → physical block", max(140, 70 + 24 * len(holders)), dark)
    if not holders:
        fig.add_annotation(text="no request holds blocks", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return fig
    fills, texts, hovers = [], [], []
    c = colors(dark)
    by_id = {(b.pool, b.block_id): b for b in snapshot.blocks}
    for r in holders:
        pool = r.pool or "gpu"
        for j in range(width):
            if j < len(r.block_table):
                block_id = r.block_table[j]
                fills.append(request_color(r.request_id))
                block = by_id.get((pool, block_id))
                shared = block is not None and block.ref_cnt > 1
                texts.append(f"{'c' if pool == 'cpu' else ''}{block_id}{'*' if shared else ''}")
                hovers.append(f"req {r.request_id} · logical {j} → {POOL_TITLES[pool].lower()} block {block_id}"
                              + (f"<br>ref {block.ref_cnt}, tokens {block.tokens_filled}" if block else ""))
            else:
                fills.append(c["free"])
                texts.append("")
                hovers.append(f"req {r.request_id} · logical {j}: not allocated")
    _grid(fig, fills, texts, hovers, width, "block tables")
    fig.update_yaxes(visible=True, automargin=True, tickmode="array", tickvals=list(range(len(holders))), showgrid=False,
                     ticktext=[f"req {r.request_id}{' (CPU)' if r.pool == 'cpu' else ''}" for r in holders])
    fig.update_xaxes(visible=True, side="top", tickmode="linear", dtick=1 if width <= 24 else 4, showgrid=False,
                     title=dict(text="logical block (c = CPU pool, * = shared)", font=dict(size=11)))
    if changed_requests:
        rows = [i for i, r in enumerate(holders) if r.request_id in changed_requests]
        fig.update_layout(shapes=[
            dict(type="rect", x0=-0.5, x1=width - 0.5, y0=i - 0.5, y1=i + 0.5, line=dict(color=c["outline"], width=1.5),
                 fillcolor="rgba(0,0,0,0)", layer="above") for i in rows
        ])
    fig.update_layout(showlegend=False, margin=dict(l=4, r=4, t=60, b=4))
    return fig
