"""Sweep figures: pure functions of a sweep's DataFrames (``pykv.lab.sweep.SweepResult``) -> plotly Figure.

Measured and modelled numbers never look alike: measured traces are solid with filled markers;
modelled PCIe traces are dashed (Gen5) or dotted (Gen4) with hollow markers, and their names say
"modelled". Every title says in one sentence what the chart shows; its subtitle names the device.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from pykv.viz.theme import colors, figure, log_axis

# One colour per sweep mode (Okabe-Ito), the same in every chart.
MODE_COLORS = {
    "recompute": "#0072B2",
    "swap": "#D55E00",
    "swap per-block": "#E69F00",
    "recompute+prefix": "#56B4E9",
    "swap+prefix": "#CC79A7",
    "recompute+offload": "#009E73",
}
MODELLED = {"gen5": ("PCIe Gen5", "dash"), "gen4": ("PCIe Gen4", "dot")}
AXIS_LABELS = {
    "num_gpu_blocks": "KV pool size (blocks)",
    "block_size": "block size (tokens)",
    "max_num_seqs": "max_num_seqs",
}
RUN_TITLES = {
    "num_gpu_blocks": "End-to-end time, throughput and preemptions as the KV pool shrinks, one line per mode.",
    "block_size": "End-to-end time, throughput and preemptions vs block size, at a fixed pool capacity in tokens.",
    "max_num_seqs": "Throughput vs max_num_seqs on an over-subscribed workload: past what the pool holds, "
    "more concurrency brings preemptions.",
}
MARGIN = dict(l=72, r=8, t=96, b=52)  # room for the title + subtitle and the axis titles


def _device(frame: pd.DataFrame) -> str:
    return ", ".join(sorted(frame["device"].astype(str).unique()))


def _trace(
    name: str, x, y, mode: str, unit: str, modelled: str | None = None, markers_only: bool = False, **extra
) -> dict:
    """A measured trace (solid, filled markers) or, with ``modelled`` = "gen4"/"gen5", a modelled one."""
    color = MODE_COLORS.get(mode)
    line = dict(color=color, width=2) if modelled is None else dict(color=color, width=1.5, dash=MODELLED[modelled][1])
    marker = dict(color=color, size=7, symbol="circle" if modelled is None else "circle-open")
    return dict(
        type="scatter",
        x=list(x),
        y=list(y),
        name=name,
        legendgroup=name,
        mode="markers" if markers_only else "lines+markers",
        line=line,
        marker=marker,
        hovertemplate=f"{name}<br>x=%{{x}}<br>%{{y:.3g}} {unit}<extra></extra>",
        **extra,
    )


def _empty(title: str, subtitle: str, dark: bool, height: int, message: str) -> go.Figure:
    note = dict(
        text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font=dict(color=colors(dark)["muted"])
    )
    return figure(
        title,
        height,
        dark,
        [],
        subtitle=subtitle,
        margin=MARGIN,
        annotations=[note],
        xaxis=dict(visible=False),
        yaxis=dict(visible=False),
    )


def runs_figure(runs: pd.DataFrame, dark: bool = False, capacity: int | None = None, height: int = 580) -> go.Figure:
    """Wall time, output tokens/s and preemptions of every run against the swept axis, one line per
    mode, in three stacked panels. ``capacity`` (for max_num_seqs sweeps) marks how many requests
    the pool carries to their last token."""
    axis = runs["axis"].iloc[0] if len(runs) else "num_gpu_blocks"
    title = RUN_TITLES[axis]
    subtitle = f"Measured on {_device(runs)}: wall time and output tokens/s of the whole workload, preemptions counted."
    if runs.empty:
        return _empty(title, subtitle, dark, height, "No runs yet.")
    panels = [
        ("wall_s", "end-to-end (s)", "s"),
        ("tokens_per_s", "output tokens/s", "tok/s"),
        ("preemptions", "preemptions", "preemptions"),
    ]
    data = [
        _trace(mode, group["value"], group[column], mode, unit, showlegend=i == 0, yaxis=f"y{i + 1}" if i else "y")
        for mode, group in runs.sort_values("value").groupby("mode", sort=False)
        for i, (column, _, unit) in enumerate(panels)
    ]
    gap, span = 0.06, (1 - 2 * 0.06) / 3
    axes: dict[str, Any] = {
        f"yaxis{i + 1}" if i else "yaxis": dict(
            title=dict(text=label),
            rangemode="tozero",
            anchor="x",
            domain=[1 - (i + 1) * span - i * gap, 1 - i * (span + gap)],
        )
        for i, (_, label, _) in enumerate(panels)
    }
    marks: dict[str, Any] = {}
    if capacity is not None:
        muted = colors(dark)["muted"]
        marks = dict(
            shapes=[
                dict(
                    type="line",
                    x0=capacity,
                    x1=capacity,
                    y0=0,
                    y1=1,
                    xref="x",
                    yref="paper",
                    line=dict(color=muted, dash="dot", width=1),
                )
            ],
            annotations=[
                dict(
                    text=f"the pool carries {capacity} requests to the end",
                    x=capacity,
                    y=1,
                    xref="x",
                    yref="paper",
                    showarrow=False,
                    xanchor="left",
                    font=dict(color=muted, size=11),
                )
            ],
        )
    xaxis: dict[str, Any] = dict(title=dict(text=AXIS_LABELS[axis]), anchor="y3")
    if axis == "block_size":
        xaxis |= dict(type="log", tickvals=sorted(int(v) for v in runs["value"].unique()))
    return figure(
        title, height, dark, data, subtitle=subtitle, margin=MARGIN, hovermode="x unified", xaxis=xaxis, **axes, **marks
    )


def preemption_cost_figure(preemptions: pd.DataFrame, dark: bool = False, height: int = 440) -> go.Figure:
    """Each preemption's cost against the victim's sequence length: measured points per mode, and
    for swap modes the same copies modelled across PCIe Gen4 and Gen5."""
    title = "Cost of one preemption vs the victim's sequence length: recompute and swap measured, PCIe modelled."
    subtitle = (
        f"Filled points: measured on {_device(preemptions)}.<br>Dashed (Gen5) / dotted (Gen4) lines, hollow "
        "markers: the same swaps' bytes and copies modelled across PCIe, not measured."
    )
    if "modelled_target" in preemptions and preemptions["modelled_target"].notna().any():
        subtitle += (
            f" Hollow points alone: each preemption's bill modelled on "
            f"{preemptions['modelled_target'].dropna().iloc[0]}."
        )
    if preemptions.empty:
        return _empty(title, subtitle, dark, height, "No preemption in this sweep: shrink the pool or add requests.")
    if "modelled_target_s" in preemptions:
        zero = int((preemptions["modelled_target_s"] <= 0).sum())
        if zero:  # a log axis cannot draw 0: say so rather than let them vanish
            subtitle += (
                f"<br>{zero} modelled bill(s) of 0 are not drawn (log axis): the victim was preempted "
                "again before it recovered, or the run ended first (modelled_note in the Preemptions CSV)."
            )
    if "modelled_note" in preemptions:
        marginal = int(preemptions["modelled_note"].fillna("").str.startswith("marginal").sum())
        if marginal:
            subtitle += (
                f"<br>{marginal} bill(s) are marginal: the re-prefill rode in steps whose weight reads were "
                "paid anyway, so it added almost nothing there."
            )
    data = []
    for mode, group in preemptions.sort_values("seq_len").groupby("mode", sort=False):
        data.append(
            _trace(f"{mode}, measured", group["seq_len"], group["measured_s"] * 1e3, mode, "ms", markers_only=True)
        )
        swaps = group[group["preemption_mode"] == "swap"]
        for gen, (label, _) in MODELLED.items():
            if not swaps.empty:
                line = swaps.groupby("seq_len")[f"modelled_pcie_{gen}_s"].mean() * 1e3
                data.append(_trace(f"{mode}, modelled {label}", line.index, line.values, mode, "ms", modelled=gen))
        if "modelled_target_s" in group:  # the Sweep page's target
            priced = group.dropna(subset=["modelled_target_s"])
            priced = priced[priced["modelled_target_s"] > 0]
        else:
            priced = group.iloc[0:0]
        if not priced.empty:
            data.append(
                _trace(
                    f"{mode}, modelled {priced['modelled_target'].iloc[0]}",
                    priced["seq_len"],
                    priced["modelled_target_s"] * 1e3,
                    mode,
                    "ms",
                    modelled="gen4",
                    markers_only=True,
                )
            )
    return figure(
        title,
        height,
        dark,
        data,
        subtitle=subtitle,
        margin=MARGIN,
        xaxis=dict(title=dict(text="victim's sequence length (tokens whose KV was lost)")),
        yaxis=log_axis("cost of the preemption (ms, log scale)", [y for t in data for y in t["y"]]),
    )


def block_size_cost_figure(preemptions: pd.DataFrame, dark: bool = False, height: int = 440) -> go.Figure:
    """Cost per KiB of KV against block size, per mode, on log axes. Swap: copy-out + copy-in time;
    recompute: re-prefill time; both over the KV bytes the victim held, so they compare directly.
    Swap modes also get their copies modelled across PCIe, where each copy pays a fixed overhead."""
    title = "Preemption cost per KiB of KV vs block size: swap by batched and by per-block copies, beside recompute."
    subtitle = (
        f"Solid: measured on {_device(preemptions)}. Dashed (Gen5) / dotted (Gen4), hollow: the same copies "
        "modelled across PCIe, not measured.<br>Swap: copy-out + copy-in time; recompute: re-prefill time; "
        "both per KiB of KV the victim held."
    )
    if preemptions.empty:
        return _empty(title, subtitle, dark, height, "No preemption in this sweep: shrink the pool or add requests.")
    data = []
    for mode, group in preemptions.groupby("mode", sort=False):
        per_size = group.groupby("block_size")
        kib = per_size["num_bytes"].sum() / 1024
        cost = per_size["measured_s"].sum() * 1e6 / kib
        data.append(_trace(f"{mode}, measured", cost.index, cost.values, mode, "µs/KiB"))
        swaps = group[group["preemption_mode"] == "swap"].groupby("block_size")
        for gen, (label, _) in MODELLED.items():
            if swaps.ngroups:
                line = swaps[f"modelled_pcie_{gen}_s"].sum() * 1e6 / (swaps["num_bytes"].sum() / 1024)
                data.append(_trace(f"{mode}, modelled {label}", line.index, line.values, mode, "µs/KiB", modelled=gen))
    sizes = sorted(int(b) for b in preemptions["block_size"].unique())
    return figure(
        title,
        height,
        dark,
        data,
        subtitle=subtitle,
        margin=MARGIN,
        xaxis=dict(title=dict(text="block size (tokens)"), type="log", tickvals=sizes),
        yaxis=log_axis("µs per KiB of KV (log scale)", [y for t in data for y in t["y"]]),
    )
