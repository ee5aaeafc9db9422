"""A block-size sweep's cost per KiB of KV: a pure function of a sweep's preemptions DataFrame -> plotly Figure."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from pykv.border.timing_measures import DEFAULT_MEASURE, MEASURES
from pykv.viz.sweep_charts import MARGIN, MODELLED, _device, _empty, _trace
from pykv.viz.sweep_series import column, series_groups, timing_note
from pykv.viz.theme import figure, log_axis


def block_size_cost_figure(
    preemptions: pd.DataFrame, dark: bool = False, height: int = 440, measure: str = DEFAULT_MEASURE
) -> go.Figure:
    """Cost per KiB of KV against block size, per series, on log axes, on ``measure``'s clock. Swap: copy-out +
    copy-in time; recompute: re-prefill time; both over the KV bytes the victim held, so they compare directly.
    Swap modes also get their copies modelled across PCIe, where each copy pays a fixed overhead."""
    title = "Preemption cost per KiB of KV vs block size: swap by batched and by per-block copies, beside recompute."
    clock = timing_note(preemptions, measure) if len(preemptions) else MEASURES[measure]
    subtitle = (
        f"Solid: measured on {_device(preemptions)}, {clock}. Dashed (Gen5) / dotted (Gen4), hollow: the same "
        "copies modelled across PCIe, not measured.<br>Swap: copy-out + copy-in time; recompute: re-prefill time; "
        "both per KiB of KV the victim held."
    )
    if preemptions.empty:
        return _empty(title, subtitle, dark, height, "No preemption in this sweep: shrink the pool or add requests.")
    measured = column("measured_s", measure, preemptions)
    data = []
    for label, mode, profile, group in series_groups(preemptions, sort_by="block_size"):
        per_size = group.groupby("block_size")
        kib = per_size["num_bytes"].sum() / 1024
        cost = per_size[measured].sum() * 1e6 / kib
        data.append(_trace(f"{label}, measured", cost.index, cost.values, mode, "µs/KiB", profile=profile))
        swaps = group[group["preemption_mode"] == "swap"].groupby("block_size")
        for gen, (name, _) in MODELLED.items():
            if swaps.ngroups:
                line = swaps[f"modelled_pcie_{gen}_s"].sum() * 1e6 / (swaps["num_bytes"].sum() / 1024)
                data.append(
                    _trace(
                        f"{label}, modelled {name}",
                        line.index,
                        line.values,
                        mode,
                        "µs/KiB",
                        modelled=gen,
                        profile=profile,
                    )
                )
    sizes = sorted(int(b) for b in preemptions["block_size"].unique())
    return figure(
        title,
        height,
        dark,
        data,
        subtitle=subtitle,
        margin=MARGIN,
        xaxis=dict(title=dict(text="block size (tokens)"), type="log", tickvals=sizes),
        yaxis=log_axis(
            f"µs per KiB of KV ({'CPU' if measure == 'cpu' else 'wall'}, log scale)", [y for t in data for y in t["y"]]
        ),
    )
