"""Sweep figures: pure functions of a sweep's DataFrames (``pykv.lab.sweep.SweepResult``) -> plotly Figure.

Measured and modelled numbers never look alike: measured traces are solid with filled markers;
modelled PCIe traces are dashed (Gen5) or dotted (Gen4) with hollow markers, and their names say
"modelled". Every title says in one sentence what the chart shows; its subtitle names the device and, for a
measured time, its clock (``measure``: the engine thread's CPU time or wall time), how many repeats its median
took and the machine's load. One line per series, named with its release (``sweep_series``); counts are drawn
as counts, the same every repeat.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from pykv.border.timing_measures import DEFAULT_MEASURE, MEASURES
from pykv.viz.sweep_series import column, error_bars, noisy_rows, ring, series_groups, symbol, timing_note
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
    "num_gpu_blocks": "End-to-end time, throughput and preemptions as the KV pool shrinks, one line per series.",
    "block_size": "End-to-end time, throughput and preemptions vs block size, at a fixed pool capacity in tokens.",
    "max_num_seqs": "Throughput vs max_num_seqs on an over-subscribed workload: past what the pool holds, "
    "more concurrency brings preemptions.",
}
MARGIN = dict(l=72, r=8, t=96, b=52)  # room for the title + subtitle and the axis titles


def _device(frame: pd.DataFrame) -> str:
    return ", ".join(sorted(frame["device"].astype(str).unique()))


def _trace(
    name: str,
    x,
    y,
    mode: str,
    unit: str,
    modelled: str | None = None,
    markers_only: bool = False,
    profile: str = "",
    error_y: dict | None = None,
    **extra,
) -> dict:
    """A measured trace (solid, filled markers, its release's symbol) or, with ``modelled`` = "gen4"/"gen5", a
    modelled one (hollow)."""
    color = MODE_COLORS.get(mode)
    line = dict(color=color, width=2) if modelled is None else dict(color=color, width=1.5, dash=MODELLED[modelled][1])
    shape = symbol(profile)
    marker = dict(color=color, size=7, symbol=shape if modelled is None else f"{shape}-open")
    if error_y is not None:
        extra["error_y"] = error_y
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


def runs_figure(
    runs: pd.DataFrame,
    dark: bool = False,
    capacity: int | None = None,
    height: int = 580,
    measure: str = DEFAULT_MEASURE,
) -> go.Figure:
    """End-to-end time and output tokens/s on ``measure``'s clock (median, bars from the fastest to the slowest
    repeat, noisy points ringed) and preemptions (counted) of every run against the swept axis, one line per
    series, in three stacked panels. ``capacity`` (for max_num_seqs sweeps) marks how many requests the pool
    carries to their last token."""
    axis = runs["axis"].iloc[0] if len(runs) else "num_gpu_blocks"
    title = RUN_TITLES[axis]
    clock = timing_note(runs, measure) if len(runs) else MEASURES[measure]
    subtitle = (
        f"End-to-end time and output tokens/s of the whole workload, measured on {_device(runs)}: {clock}.<br>"
        "Preemptions counted: the same every repeat."
    )
    if runs.empty:
        return _empty(title, subtitle, dark, height, "No runs yet.")
    word = "CPU" if measure == "cpu" else "wall"
    panels = [
        (column("wall_s", measure, runs), f"end-to-end (s, {word})", "s"),
        (column("tokens_per_s", measure, runs), f"output tokens/s ({word})", "tok/s"),
        ("preemptions", "preemptions (counted)", "preemptions"),
    ]
    data = []
    noisy: list[dict] = []
    for label, mode, profile, group in series_groups(runs):
        for i, (name, _, unit) in enumerate(panels):
            yaxis = f"y{i + 1}" if i else "y"
            bars = error_bars(group, name) if i < 2 else None
            data.append(
                _trace(
                    label,
                    group["value"],
                    group[name],
                    mode,
                    unit,
                    profile=profile,
                    showlegend=i == 0,
                    yaxis=yaxis,
                    error_y=bars,
                )
            )
            flagged = noisy_rows(group, name) if i < 2 else group.iloc[0:0]
            if len(flagged):
                noisy.append(ring(flagged["value"], flagged[name], unit, yaxis=yaxis, showlegend=not noisy))
    data += noisy
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


def preemption_cost_figure(
    preemptions: pd.DataFrame, dark: bool = False, height: int = 440, measure: str = DEFAULT_MEASURE
) -> go.Figure:
    """Each preemption's cost against the victim's sequence length: measured points per series on ``measure``'s
    clock (the median of the repeats, bars to the fastest and slowest), and for swap modes the same copies modelled
    across PCIe Gen4 and Gen5."""
    title = "Cost of one preemption vs the victim's sequence length: recompute and swap measured, PCIe modelled."
    clock = timing_note(preemptions, measure) if len(preemptions) else MEASURES[measure]
    subtitle = (
        f"Filled points: measured on {_device(preemptions)}, {clock}.<br>Dashed (Gen5) / dotted (Gen4) lines, "
        "hollow markers: the same swaps' bytes and copies modelled across PCIe, not measured."
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
    measured = column("measured_s", measure, preemptions)
    data = []
    for label, mode, profile, group in series_groups(preemptions, sort_by="seq_len"):
        bars = error_bars(group, measured, scale=1e3)
        data.append(
            _trace(
                f"{label}, measured",
                group["seq_len"],
                group[measured] * 1e3,
                mode,
                "ms",
                markers_only=True,
                profile=profile,
                error_y=bars,
            )
        )
        swaps = group[group["preemption_mode"] == "swap"]
        for gen, (name, _) in MODELLED.items():
            if not swaps.empty:
                line = swaps.groupby("seq_len")[f"modelled_pcie_{gen}_s"].mean() * 1e3
                data.append(
                    _trace(
                        f"{label}, modelled {name}", line.index, line.values, mode, "ms", modelled=gen, profile=profile
                    )
                )
        if "modelled_target_s" in group:  # the Sweep page's target
            priced = group.dropna(subset=["modelled_target_s"])
            priced = priced[priced["modelled_target_s"] > 0]
        else:
            priced = group.iloc[0:0]
        if not priced.empty:
            data.append(
                _trace(
                    f"{label}, modelled {priced['modelled_target'].iloc[0]}",
                    priced["seq_len"],
                    priced["modelled_target_s"] * 1e3,
                    mode,
                    "ms",
                    modelled="gen4",
                    markers_only=True,
                    profile=profile,
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
        yaxis=log_axis(
            f"cost of the preemption (ms, {'CPU' if measure == 'cpu' else 'wall'}, log scale)",
            [y for t in data for y in t["y"]],
        ),
    )
