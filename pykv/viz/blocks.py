"""The block grid (one cell per physical block of a pool) and the block tables (per request,
logical block -> physical block). Pure functions of a Snapshot.

Grid layout: blocks fill rows left to right, top to bottom::

    block_id:  0  1  2  3  4  5  6  7        row = block_id // cols
               8  9 10 11 12 13 14 15        col = block_id %  cols

A cell's fill says who owns it (the first owner's colour; shared blocks print ref > 1), its text
the reference count (black or white, whichever contrasts with the fill): blank = free, "0" = free
but cached (hash kept, reusable), "1".. = used. Under V1, block 0 prints "∅": the null block, which
the pool keeps back and never hands out (so N blocks leave N-1 usable).
Cells in ``changed`` get an outline in the theme's outline colour.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

import plotly.graph_objects as go

from pykv.border.snapshot import BlockView, Snapshot
from pykv.viz.theme import colors, figure, request_color, text_color_on, text_px, tick_label_margin, title_px

POOL_TITLES = {"gpu": "Device KV pool", "cpu": "CPU swap pool", "offload": "CPU offloading tier"}
SHORT_TITLES = {"gpu": "Device KV pool", "cpu": "CPU swap", "offload": "CPU tier"}
HIDDEN_AXIS = dict(visible=False, fixedrange=True)
NULL_MARK = "∅"  # V1's null block (block 0)


def grid_columns(num_blocks: int) -> int:
    """Columns of the grid: 8 up to 64 blocks, 16 up to 256, 32 beyond; ceil(sqrt(n)) up to 16 blocks."""
    if num_blocks <= 16:
        return max(1, math.ceil(math.sqrt(num_blocks)))
    return 8 if num_blocks <= 64 else 16 if num_blocks <= 256 else 32


def cell_fill(block: BlockView, dark: bool = False) -> str:
    c = colors(dark)
    if block.state == "used" and block.owners:
        return request_color(block.owners[0])
    return c["cached"] if block.state == "cached" else c["free"]


def cell_text(block: BlockView) -> str:
    if block.state == "null":
        return NULL_MARK
    return "" if block.state == "free" else str(block.ref_cnt)


def tier_cell_text(block: BlockView) -> str:
    """A stored tier block shows its place in the eviction order (0 = evicted next); an empty one nothing."""
    return "" if block.block_hash is None else str(block.free_queue_position)


def tier_hover(block: BlockView) -> str:
    if block.block_hash is None:
        return f"<b>tier block {block.block_id}</b><br>empty"
    return "<br>".join(
        [
            f"<b>tier block {block.block_id}</b> · CPU offloading tier",
            f"hash: {block.block_hash[:12]}…",
            f"eviction order: {block.free_queue_position} (0 = evicted next: the oldest request's tail)",
            f"tokens: {block.tokens_filled}",
        ]
    )


def block_hover(block: BlockView, pool_name: str) -> str:
    if block.state == "null":
        return (
            f"<b>block {block.block_id}</b> · {pool_name}<br>the null block: vLLM V1's pool keeps it back "
            "(never handed out, in no block table)"
        )
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


LEGEND_FONT_PX = 11
LEGEND_LINE_PX = 16
LEGEND_SEP = "   "
GRID_MARGIN_PX = 4
CELL_FONT_PX = 11


def legend_lines(
    entries: list[tuple[str, str, str]], per_line: int = 6, width: float | None = None, font_px: float = LEGEND_FONT_PX
) -> list[str]:
    """A legend's lines (``(glyph, colour, label)`` entries): ``per_line`` entries a line, or, with ``width``
    (px), as many as fit in it at ``font_px`` (estimated: ``theme.text_px``), so no line runs past a narrow figure's
    edge. The legend is one annotation: one trace per entry would cost more than the whole grid to build."""
    items = [f'<span style="color:{color}">{glyph}</span> {label}' for glyph, color, label in entries]
    if width is None:
        return [LEGEND_SEP.join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    lines: list[list[str]] = [[]]
    used = 0
    for item, (glyph, _, label) in zip(items, entries):
        chars = len(re.sub(r"<[^>]+>", "", glyph)) + 1 + len(label)
        wanted = chars + (len(LEGEND_SEP) if lines[-1] else 0)
        if lines[-1] and text_px(used + wanted, font_px) > width:
            lines.append([])
            used, wanted = 0, chars
        lines[-1].append(item)
        used += wanted
    return [LEGEND_SEP.join(line) for line in lines]


def grid_traces(
    fills: list[str], texts: list[str], hovers: list[str], cols: int, name: str, font_px: float = CELL_FONT_PX
) -> list[dict]:
    """Cells i = 0..n-1 at (i % cols, i // cols): one heatmap for the fills (a discrete colour scale)
    and two text traces for the labels, black on light fills and white on dark ones."""
    n = len(fills)
    rows = max(1, math.ceil(n / cols))
    palette = sorted(set(fills))
    index = {f: i for i, f in enumerate(palette)}
    z: list[list[int | None]] = [[None] * cols for _ in range(rows)]
    hover = [[""] * cols for _ in range(rows)]
    for i in range(n):
        z[i // cols][i % cols] = index[fills[i]]
        hover[i // cols][i % cols] = hovers[i]
    k = max(1, len(palette) - 1)  # value j maps exactly to palette[j]
    scale = [[i / k, f] for i, f in enumerate(palette)] if len(palette) > 1 else [[0, palette[0]], [1, palette[0]]]
    traces = [
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
            name=name,
            showlegend=False,
        )
    ]
    ink = {f: text_color_on(f) for f in palette}
    for color in ("#000000", "#FFFFFF"):
        cells = [i for i in range(n) if texts[i] and ink[fills[i]] == color]
        traces.append(
            dict(
                type="scatter",
                mode="text",
                x=[i % cols for i in cells],
                y=[i // cols for i in cells],
                text=[texts[i] for i in cells],
                textfont=dict(color=color, size=font_px),
                hoverinfo="skip",
                showlegend=False,
                name=f"{name} labels",
            )
        )
    return traces


def outline_shapes(cells: Iterable[int], cols: int, color: str) -> list[dict]:
    return [
        dict(
            type="rect",
            x0=i % cols - 0.47,
            x1=i % cols + 0.47,
            y0=i // cols - 0.47,
            y1=i // cols + 0.47,
            line=dict(color=color, width=2.5),
            fillcolor="rgba(0,0,0,0)",
            layer="above",
        )
        for i in sorted(cells)
    ]


def _empty(title: str, height: int, dark: bool, message: str, floor_px: float | None = None) -> go.Figure:
    return figure(
        title,
        height,
        dark,
        [],
        floor_px=floor_px,
        xaxis=HIDDEN_AXIS,
        yaxis=HIDDEN_AXIS,
        annotations=[dict(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")],
    )


def block_grid_figure(
    snapshot: Snapshot,
    pool: str = "gpu",
    changed: set[tuple[str, int]] | None = None,
    dark: bool = False,
    height: int | None = None,
    legend: bool = True,
    cols: int | None = None,
    width: int | None = None,
    floor_px: float | None = None,
) -> go.Figure:
    """One cell per physical block of ``pool``; ``changed`` = (pool, block id) pairs to outline;
    ``cols`` overrides :func:`grid_columns` (a narrow side panel wants fewer); ``width``: the px it is drawn at,
    where known (a review pack's small multiple), to which the legend wraps (else six entries a line); ``floor_px``:
    its smallest text (the projector's floor), else the grid's own 11 px."""
    blocks = sorted((b for b in snapshot.blocks if b.pool == pool), key=lambda b: b.block_id)
    tier = pool == "cpu" and snapshot.cpu_pool == "offload"
    used = sum(b.block_hash is not None if tier else b.state == "used" for b in blocks)
    nulls = sum(b.state == "null" for b in blocks)
    name = POOL_TITLES["offload" if tier else pool] if (tier or pool in POOL_TITLES) else pool
    short = SHORT_TITLES["offload" if tier else pool] if (tier or pool in SHORT_TITLES) else name
    # Short enough for a learner's 290 px grid column at 1280 px (a plotly title never wraps): the null block is
    # explained by its cell and the legend, not here.
    title = f"{short} · {used}/{len(blocks) - nulls}" + (
        " blocks used" if pool == "gpu" else " stored" if tier else " used"
    )
    cols = cols or (grid_columns(len(blocks)) if blocks else 1)
    rows = max(1, math.ceil(len(blocks) / cols))
    if not blocks:
        return _empty(
            title,
            height or max(160, min(520, 60 + rows * 26 + (70 if legend else 0))),
            dark,
            "no blocks in this pool",
            floor_px,
        )
    c = colors(dark)
    data = grid_traces(
        [cell_fill(b, dark) for b in blocks],
        [tier_cell_text(b) if tier else cell_text(b) for b in blocks],
        [tier_hover(b) if tier else block_hover(b, name) for b in blocks],
        cols,
        name,
        max(CELL_FONT_PX, floor_px or 0),
    )
    legend_font = max(LEGEND_FONT_PX, floor_px or 0)
    line_px = round(LEGEND_LINE_PX * legend_font / LEGEND_FONT_PX)
    top = round(30 * title_px(floor_px) / title_px(None))  # the title's room grows with it
    annotations = []
    lines: list[str] = []
    if legend:
        owners = sorted(
            {o for b in blocks for o in b.owners}, key=lambda r: (not r.isdigit(), int(r) if r.isdigit() else 0, r)
        )
        entries = [("■", request_color(o), f"req {o}") for o in owners]
        entries += [("□", c["muted"], "free"), ("■", c["cached"], "cached (ref 0, hash kept)")]
        entries += [(NULL_MARK, c["muted"], "null block (not counted)")] if nulls else []
        entries += [("<b>□</b>", c["outline"], "changed this step")]
        lines = legend_lines(entries, width=None if width is None else width - 2 * GRID_MARGIN_PX, font_px=legend_font)
        annotations.append(
            dict(
                text="<br>".join(lines),
                x=0,
                y=0,
                xref="paper",
                yref="paper",
                xanchor="left",
                yanchor="top",
                yshift=-4,
                showarrow=False,
                align="left",
                font=dict(size=legend_font),
            )
        )
    legend_px = max(70, 38 + line_px * len(lines)) if legend else 0  # up to two lines: the 70 px it had
    height = height or max(160, min(520 + max(0, legend_px - 70), 60 + rows * 26 + legend_px))
    marked = [b.block_id for b in blocks if changed and (pool, b.block_id) in changed]
    return figure(
        title,
        height,
        dark,
        data,
        shapes=outline_shapes(marked, cols, c["outline"]),
        showlegend=False,
        annotations=annotations,
        xaxis=HIDDEN_AXIS | dict(range=[-0.5, cols - 0.5]),
        yaxis=HIDDEN_AXIS | dict(range=[rows - 0.5, -0.5]),
        margin=dict(l=GRID_MARGIN_PX, r=GRID_MARGIN_PX, t=top, b=16 + line_px * len(lines)),
        floor_px=floor_px,
    )


def block_tables_figure(snapshot: Snapshot, dark: bool = False, changed_requests: set[str] | None = None) -> go.Figure:
    """Rows = requests holding blocks; column j = logical block j; cell text = physical block id."""
    holders = [r for r in snapshot.requests if r.block_table]
    title = "Block tables · logical block → physical block"
    height = max(160, 90 + 24 * len(holders))
    if not holders:
        return _empty(title, height, dark, "no request holds blocks")
    width = max(len(r.block_table) for r in holders)
    c = colors(dark)
    by_id = {(b.pool, b.block_id): b for b in snapshot.blocks}
    fills, texts, hovers = [], [], []
    for r in holders:
        pool = r.pool or "gpu"
        for j in range(width):
            if j >= len(r.block_table):
                fills.append(c["free"])
                texts.append("")
                hovers.append(f"req {r.request_id} · logical {j}: not allocated")
                continue
            block_id = r.block_table[j]
            block = by_id.get((pool, block_id))
            shared = block is not None and block.ref_cnt > 1
            fills.append(request_color(r.request_id))
            texts.append(f"{'c' if pool == 'cpu' else ''}{block_id}{'*' if shared else ''}")
            hovers.append(
                f"req {r.request_id} · logical {j} → {POOL_TITLES[pool].lower()} block {block_id}"
                + (f"<br>ref {block.ref_cnt}, tokens {block.tokens_filled}" if block else "")
            )
    rows = [i for i, r in enumerate(holders) if changed_requests and r.request_id in changed_requests]
    labels = [f"req {r.request_id}{' (CPU)' if r.pool == 'cpu' else ''}" for r in holders]
    return figure(
        title,
        height,
        dark,
        grid_traces(fills, texts, hovers, width, "block tables"),
        showlegend=False,
        subtitle="columns: logical block · cells: physical block id (c = CPU pool, * = shared)",
        shapes=[
            dict(
                type="rect",
                x0=-0.5,
                x1=width - 0.5,
                y0=i - 0.5,
                y1=i + 0.5,
                line=dict(color=c["outline"], width=1.5),
                fillcolor="rgba(0,0,0,0)",
                layer="above",
            )
            for i in rows
        ],
        xaxis=dict(
            fixedrange=True,
            range=[-0.5, width - 0.5],
            side="top",
            tickmode="linear",
            dtick=1 if width <= 24 else 4,
            showgrid=False,
        ),
        yaxis=dict(
            fixedrange=True,
            range=[len(holders) - 0.5, -0.5],
            automargin=True,
            tickmode="array",
            showgrid=False,
            tickvals=list(range(len(holders))),
            ticktext=labels,
        ),
        margin=dict(l=4 + tick_label_margin(labels), r=4, t=86, b=4),
    )
