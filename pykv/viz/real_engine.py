"""vLLM's real engine at one step, drawn as pykv's own views draw pykv: its block pool as a grid, each request's
block table beside pykv's, its key metrics. Pure functions of a ``RealPool`` (``pykv.real_vllm.trace``), the typed
reading of what the driver read from vLLM's ``BlockPool`` and ``Scheduler`` after the step.

The grid reads as pykv's (``blocks.block_grid_figure``): blocks fill rows left to right, a cell's fill is its first
owner's colour (an owner: a request whose block table holds it), its text the reference count (blank = free, "0" =
free but cached, "∅" = vLLM's null block, block 0, never handed out). Outlined: changed since the step before.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from pykv.border.snapshot import Snapshot
from pykv.real_vllm.trace import RealBlock, RealPool
from pykv.viz.blocks import (
    GRID_MARGIN_PX,
    HIDDEN_AXIS,
    LEGEND_FONT_PX,
    LEGEND_LINE_PX,
    NULL_MARK,
    grid_columns,
    grid_traces,
    legend_lines,
    outline_shapes,
)
from pykv.viz.theme import colors, figure, request_color

TITLE = "vLLM's KV pool"


def block_owners(pool: RealPool) -> dict[int, list[tuple[str, int]]]:
    """block id -> (request id, its index in that request's table), in table order of the requests."""
    owners: dict[int, list[tuple[str, int]]] = {}
    for rid, ids in pool.tables.items():
        for j, block_id in enumerate(ids):
            owners.setdefault(block_id, []).append((rid, j))
    return owners


def _state(block: RealBlock) -> str:
    if block.is_null:
        return "null"
    if block.ref_cnt > 0:
        return "used"
    return "cached" if block.cached else "free"


def _fill(block: RealBlock, owners: list[tuple[str, int]], dark: bool) -> str:
    c = colors(dark)
    state = _state(block)
    if state == "used":
        return request_color(owners[0][0]) if owners else c["muted"]  # held by no request in the tables: odd
    return c["cached"] if state == "cached" else c["free"]


def _text(block: RealBlock) -> str:
    state = _state(block)
    return NULL_MARK if state == "null" else "" if state == "free" else str(block.ref_cnt)


def _hover(block: RealBlock, owners: list[tuple[str, int]]) -> str:
    if block.is_null:
        return f"<b>block {block.block_id}</b> · vLLM's null block: kept back by its BlockPool, never handed out"
    held = ", ".join(f"req {rid} (logical {j})" for rid, j in owners) or "none"
    return "<br>".join(
        [
            f"<b>block {block.block_id}</b> · vLLM's KV pool",
            f"state: {_state(block)} · ref_cnt {block.ref_cnt}",
            f"owners: {held}",
            f"cached hash: {'yes' if block.cached else 'no'}",
        ]
    )


def _look(block: RealBlock, owners: list[tuple[str, int]]) -> tuple:
    return block.ref_cnt, block.cached, tuple(owners)


def real_pool_figure(
    pool: RealPool,
    previous: RealPool | None = None,
    dark: bool = False,
    height: int | None = None,
    width: int | None = None,
    title: str = TITLE,
) -> go.Figure:
    """One cell per block of vLLM's pool; outlined: the blocks whose reference count, cached hash or owners
    changed since ``previous`` (the step before). ``width``: the px it is drawn at, to which the legend wraps."""
    blocks = sorted(pool.blocks, key=lambda b: b.block_id)
    owners = block_owners(pool)
    nulls = sum(b.is_null for b in blocks)
    used = sum(_state(b) == "used" for b in blocks)
    c = colors(dark)
    cols = grid_columns(len(blocks)) if blocks else 1
    rows = max(1, math.ceil(len(blocks) / cols))
    data = grid_traces(
        [_fill(b, owners.get(b.block_id, []), dark) for b in blocks],
        [_text(b) for b in blocks],
        [_hover(b, owners.get(b.block_id, [])) for b in blocks],
        cols,
        TITLE,
    )
    entries = [("■", request_color(rid), f"req {rid}") for rid in sorted(pool.tables, key=_id_order)]
    entries += [("□", c["muted"], "free"), ("■", c["cached"], "cached (ref 0, hash kept)")]
    entries += [(NULL_MARK, c["muted"], "null block (not counted)")] if nulls else []
    entries += [("<b>□</b>", c["outline"], "changed this step")] if previous is not None else []
    lines = legend_lines(entries, width=None if width is None else width - 2 * GRID_MARGIN_PX)
    legend_px = max(70, 38 + LEGEND_LINE_PX * len(lines))
    height = height or max(160, min(520 + max(0, legend_px - 70), 60 + rows * 26 + legend_px))
    changed: list[int] = []
    if previous is not None:
        before_owners = block_owners(previous)
        before = {b.block_id: _look(b, before_owners.get(b.block_id, [])) for b in previous.blocks}
        changed = [b.block_id for b in blocks if before.get(b.block_id) != _look(b, owners.get(b.block_id, []))]
    index = {b.block_id: i for i, b in enumerate(blocks)}
    return figure(
        f"{title} · {used}/{len(blocks) - nulls} blocks used",
        height,
        dark,
        data,
        shapes=outline_shapes([index[i] for i in changed], cols, c["outline"]),
        showlegend=False,
        annotations=[
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
                font=dict(size=LEGEND_FONT_PX),
            )
        ],
        xaxis=HIDDEN_AXIS | dict(range=[-0.5, cols - 0.5]),
        yaxis=HIDDEN_AXIS | dict(range=[rows - 0.5, -0.5]),
        margin=dict(l=GRID_MARGIN_PX, r=GRID_MARGIN_PX, t=30, b=16 + LEGEND_LINE_PX * len(lines)),
    )


def _id_order(rid: str) -> tuple:
    return (not rid.isdigit(), int(rid) if rid.isdigit() else 0, rid)


def _arrows(ids) -> str:
    return " → ".join(map(str, ids)) if ids else "—"


def real_tables_frame(pool: RealPool, snapshot: Snapshot | None = None) -> pd.DataFrame:
    """One row per request holding blocks in either engine: vLLM's block table, and pykv's at the same step where
    ``snapshot`` is given (a ✓ where the two hold the same physical blocks in the same order)."""
    pykv = {r.request_id: tuple(r.block_table) for r in snapshot.requests if r.pool == "gpu"} if snapshot else {}
    ids = sorted(set(pool.tables) | {rid for rid, t in pykv.items() if t}, key=_id_order)
    rows = []
    for rid in ids:
        real = pool.tables.get(rid, ())
        row = {"request": rid, "vLLM's block table": _arrows(real), "blocks": len(real)}
        if snapshot is not None:
            ours = pykv.get(rid, ())
            row["pykv's block table"] = _arrows(ours)
            row["same"] = "✓" if ours == real else "✗"
        rows.append(row)
    columns = ["request", "vLLM's block table", "blocks"] + (["pykv's block table", "same"] if snapshot else [])
    return pd.DataFrame(rows, columns=columns)


# The series of vLLM's /metrics shown for a step: (label, series, help).
KEY_METRICS = (
    ("KV cache usage", "vllm:kv_cache_usage_perc", "vllm:kv_cache_usage_perc: the share of the pool's blocks in use."),
    ("Running", "vllm:num_requests_running", "vllm:num_requests_running after the step."),
    ("Waiting", "vllm:num_requests_waiting", "vllm:num_requests_waiting after the step."),
    (
        "Preemptions",
        "vllm:num_preemptions_total",
        "vllm:num_preemptions_total: V1 counts a preemption when the request's next output is processed.",
    ),
    (
        "Prefix cache hits",
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, in tokens.",
    ),
    ("Generated tokens", "vllm:generation_tokens_total", "vllm:generation_tokens_total so far."),
)


def real_metrics(pool: RealPool) -> list[tuple[str, str, str]]:
    """(label, value, help) of vLLM's key series after the step, for a metric row; a series it lacks shows —."""
    out = []
    for label, series, help_text in KEY_METRICS:
        value = pool.metrics.get(series)
        if value is None:
            shown = "—"
        elif series.endswith("_perc"):
            shown = f"{value * 100:.0f}%"
        elif series == "vllm:prefix_cache_hits_total":
            queries = pool.metrics.get("vllm:prefix_cache_queries_total")
            shown = f"{value:.0f}" + (f" / {queries:.0f}" if queries is not None else "")
        else:
            shown = f"{value:.0f}"
        out.append((label, shown, help_text))
    return out
