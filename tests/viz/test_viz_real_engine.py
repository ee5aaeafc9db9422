"""vLLM's real engine drawn as pykv's views draw pykv, from hand-made RealPools: the grid's cells (owner colour,
ref count, cached, free, the null block), the blocks changed since the step before, the block tables beside pykv's,
the key metrics."""

from __future__ import annotations

import plotly.graph_objects as go
from hand_made import request, snapshot

from pykv.real_vllm.trace import RealBlock, RealPool
from pykv.viz import request_color
from pykv.viz.real_engine import block_owners, real_metrics, real_pool_figure, real_tables_frame
from pykv.viz.theme import LIGHT


def pool(tables: dict[str, tuple[int, ...]], refs: dict[int, int], cached=(), metrics=None, size=8) -> RealPool:
    blocks = tuple(RealBlock(i, refs.get(i, 0), i == 0, i in cached) for i in range(size))
    return RealPool(blocks, tables, metrics or {})


# 8 blocks: 0 the null block; 1, 2 req 0's; 3 shared by req 0 and req 1 (ref 2); 4 cached, free; 5..7 free.
POOL = pool({"0": (1, 2, 3), "1": (3,)}, {1: 1, 2: 1, 3: 2}, cached=(1, 3, 4))


def cells(fig: go.Figure) -> tuple[list[str], list[str]]:
    """Each cell's fill and label, by block id (row-major: the grid lays blocks out in id order)."""
    hm = next(t for t in fig.data if isinstance(t, go.Heatmap))
    stops = {round(v * (hm.zmax or 1)): c for v, c in hm.colorscale}
    fills = [stops[z] for row in hm.z for z in row if z is not None]
    cols = len(hm.z[0])
    found = {y * cols + x: t for tr in fig.data if isinstance(tr, go.Scatter) for x, y, t in zip(tr.x, tr.y, tr.text)}
    return fills, [found.get(i, "") for i in range(len(fills))]


def test_cells_read_as_pykvs_grid():
    fig = real_pool_figure(POOL)
    fills, labels = cells(fig)
    assert labels == ["∅", "1", "1", "2", "0", "", "", ""]
    assert fills[1:4] == [request_color("0")] * 3  # the shared block takes its first owner's colour
    assert fills[4] == LIGHT["cached"] and fills[5:] == [LIGHT["free"]] * 3
    assert fig.layout.title.text == "vLLM's KV pool · 3/7 blocks used"  # the null block is not counted
    legend = fig.layout.annotations[0].text
    assert "req 0" in legend and "req 1" in legend and "null block (not counted)" in legend
    assert "changed this step" not in legend and not fig.layout.shapes  # nothing to compare with at step 1
    assert block_owners(POOL)[3] == [("0", 2), ("1", 0)]
    hm = next(t for t in fig.data if isinstance(t, go.Heatmap))
    hover = hm.customdata[3 // len(hm.z[0])][3 % len(hm.z[0])]
    assert "ref_cnt 2" in hover and "req 0 (logical 2), req 1 (logical 0)" in hover


def test_blocks_changed_since_the_step_before_are_outlined():
    after = pool({"0": (1, 2, 3, 5)}, {1: 1, 2: 1, 3: 1, 5: 1}, cached=(1, 3, 4))  # req 1 left, req 0 took block 5
    fig = real_pool_figure(after, previous=POOL, dark=True)
    cols = len(next(t for t in fig.data if isinstance(t, go.Heatmap)).z[0])
    outlined = sorted(round(s.x0 + 0.47) + cols * round(s.y0 + 0.47) for s in fig.layout.shapes)
    assert outlined == [3, 5] and "changed this step" in fig.layout.annotations[0].text


def test_block_tables_stand_beside_pykvs():
    ours = snapshot([], [request("0", table=[1, 2, 3]), request("1", table=[4]), request("2", "waiting")])
    frame = real_tables_frame(POOL, ours)
    assert list(frame.columns) == ["request", "vLLM's block table", "blocks", "pykv's block table", "same"]
    assert frame.to_dict("records") == [
        {
            "request": "0",
            "vLLM's block table": "1 → 2 → 3",
            "blocks": 3,
            "pykv's block table": "1 → 2 → 3",
            "same": "✓",
        },
        {"request": "1", "vLLM's block table": "3", "blocks": 1, "pykv's block table": "4", "same": "✗"},
    ]
    assert list(real_tables_frame(POOL).columns) == ["request", "vLLM's block table", "blocks"]


def test_key_metrics_are_formatted_and_a_missing_series_shows_a_dash():
    shown = dict(
        (label, value)
        for label, value, _ in real_metrics(
            pool(
                {},
                {},
                metrics={
                    "vllm:kv_cache_usage_perc": 0.4286,
                    "vllm:num_requests_running": 3.0,
                    "vllm:num_preemptions_total": 2.0,
                    "vllm:prefix_cache_hits_total": 64.0,
                    "vllm:prefix_cache_queries_total": 160.0,
                },
            )
        )
    )
    assert shown["KV cache usage"] == "43%" and shown["Running"] == "3" and shown["Preemptions"] == "2"
    assert shown["Prefix cache hits"] == "64 / 160" and shown["Waiting"] == "—"
