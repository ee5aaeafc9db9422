"""The recompute-tax chart and the CPU offloading tier's grid: pure figures of hand-made data."""

from __future__ import annotations

import dataclasses

import pandas as pd
from hand_made import block, snapshot

from pykv.viz import block_grid_figure
from pykv.viz.tax_chart import recompute_tax_figure


def test_the_tier_grid_shows_stored_blocks_and_their_lru_order():
    tier = [
        dataclasses.replace(block(i, "cpu", hash_=f"{i:016x}", filled=16), free_queue_position=p)
        for i, p in ((0, 1), (1, 0))
    ] + [block(2, "cpu")]
    snap = dataclasses.replace(
        snapshot([block(0, ref=1, owners=["a"], logical=[0], filled=16)] + tier, []), cpu_pool="offload"
    )
    fig = block_grid_figure(snap, "cpu", legend=False)
    assert fig.layout.title.text == "CPU tier · 2/3 stored"
    texts = sorted(t for trace in fig.data if trace.type == "scatter" for t in (trace.text or ()) if t)
    assert texts == ["0", "1"]  # each stored block's place in the eviction order: 0 is evicted next
    hovers = str([trace.hovertext or trace.customdata for trace in fig.data])
    assert "eviction order: 0 (0 = evicted next: the oldest request's tail)" in hovers and "empty" in hovers
    swap = dataclasses.replace(snap, cpu_pool="swap")
    assert block_grid_figure(swap, "cpu", legend=False).layout.title.text.startswith("CPU swap")


def test_the_tax_chart_draws_one_line_per_mode_and_policy_in_percent():
    rows = [
        dict(
            mode=f"{m} · {p}",
            preemption_victim=p,
            axis="num_gpu_blocks",
            value=v,
            device="cpu",
            recompute_tax=tax,
            recompute_tax_time=tax / 2,
        )
        for m, p, tax in (("recompute", "last", 0.4), ("recompute", "lcf", 0.2), ("recompute+offload", "last", 0.0))
        for v in (16, 32)
    ]
    fig = recompute_tax_figure(pd.DataFrame(rows))
    names = [t.name for t in fig.data if t.showlegend]
    assert names == ["recompute · last", "recompute · lcf", "recompute+offload · last"]
    lcf = [t for t in fig.data if t.name == "recompute · lcf"]
    assert list(lcf[0].y) == [20.0, 20.0] and list(lcf[1].y) == [10.0, 10.0] and lcf[0].line.dash == "dash"
    assert "measured on cpu" in fig.layout.title.subtitle.text
    assert recompute_tax_figure(pd.DataFrame(columns=list(rows[0]))).layout.annotations[0].text == "No runs yet."
