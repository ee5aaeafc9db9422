"""The Sweep page's modelled series: every run's real schedule priced on the target (end-to-end time and
throughput per mode beside the measured ones), each preemption's modelled bill, and the recompute-vs-swap
crossover on the target. Measured traces are solid with filled markers; modelled ones dashed, hollow, and
named "modelled <GPU> + <model>".
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go

from pykv.border.timing_measures import DEFAULT_MEASURE
from pykv.gpu_model import Estimate
from pykv.gpu_model.crossover import CrossoverCurves
from pykv.gpu_model.schedule import bills, run_totals
from pykv.viz.sweep_charts import AXIS_LABELS, MARGIN, MODE_COLORS, _device, _empty, _trace
from pykv.viz.sweep_series import column, error_bars, series_groups, timing_note
from pykv.viz.theme import colors, figure, log_axis

MODELLED_RUNS_NOTE = (
    "Modelled on {label}: each run's own steps (the chunks it scheduled, the copies it made) priced "
    "on the target and added up; modelled tokens/s = output tokens / that time. The measured line is "
    "this machine's, where a step's fixed cost dominates; on the GPU a preemption storm costs real "
    "throughput."
)
MODELLED_RUN_COLUMNS = [
    "modelled_target",
    "modelled_s",
    "modelled_tokens_per_s",
    "modelled_recompute_s",
    "modelled_swap_s",
    "modelled_delay_to_others_s",
]


def modelled_run_columns(rows: Sequence[dict], est: Estimate) -> pd.DataFrame:
    """One row per sweep run (same order): its schedule priced on ``est``."""
    out = []
    for row in rows:
        t = run_totals(est, row.get("reports") or [], row["block_size"], row["output_tokens"])
        out.append([est.label, t.modelled_s, t.tokens_per_s, t.recompute_s, t.swap_s, t.delay_to_others_s])
    return pd.DataFrame(out, columns=MODELLED_RUN_COLUMNS)


def modelled_cost_column(rows: Sequence[dict], costs: Sequence[dict], est: Estimate) -> list[float | None]:
    """Each preemption row's modelled bill in seconds (same order as ``costs``)."""
    priced = _bills_by_row(rows, est)
    found = [priced.get((_series(c), c["value"], c.get("step"), c.get("request_id"))) for c in costs]
    return [None if b is None else b.modelled_ms * 1e-3 for b in found]


def modelled_note_column(rows: Sequence[dict], costs: Sequence[dict], est: Estimate) -> list[str]:
    """Why each preemption row's modelled bill is 0 or near 0 ("" for an ordinary bill; same order as ``costs``)."""
    priced = _bills_by_row(rows, est)
    found = [priced.get((_series(c), c["value"], c.get("step"), c.get("request_id"))) for c in costs]
    return ["" if b is None else (b.note or "") for b in found]


def _series(row: dict) -> str:
    return row.get("series", row["mode"])


def _bills_by_row(rows: Sequence[dict], est: Estimate) -> dict:
    return {
        (_series(row), row["value"], b.step, b.request_id): b
        for row in rows
        for b in bills(est, row.get("reports") or [], row["block_size"])
    }


def modelled_runs_figure(
    runs: pd.DataFrame,
    dark: bool = False,
    capacity: int | None = None,
    height: int = 480,
    measure: str = DEFAULT_MEASURE,
) -> go.Figure:
    """Output tokens/s per series against the swept axis: measured on this device on ``measure``'s clock (top) and
    modelled on the target (bottom), from the very same schedules."""
    axis = runs["axis"].iloc[0] if len(runs) else "num_gpu_blocks"
    label = runs["modelled_target"].iloc[0] if len(runs) else "the target"
    title = f"Throughput per series: measured on this machine, and the same schedules modelled on {label}."
    clock = f", {timing_note(runs, measure)}" if len(runs) else ""
    subtitle = (
        f"Top, solid: measured on {_device(runs) if len(runs) else '-'}{clock}.<br>Bottom, dashed and hollow: "
        f"modelled {label}, not measured (the tiny model produced the tokens)."
    )
    if runs.empty:
        return _empty(title, subtitle, dark, height, "No runs yet.")
    rate = column("tokens_per_s", measure, runs)
    data = []
    for name, mode, profile, group in series_groups(runs):
        bars = error_bars(group, rate)
        data.append(
            _trace(
                f"{name}, measured",
                group["value"],
                group[rate],
                mode,
                "tok/s",
                profile=profile,
                error_y=bars,
            )
        )
        data.append(
            _trace(
                f"{name}, modelled {label}",
                group["value"],
                group["modelled_tokens_per_s"],
                mode,
                "tok/s",
                modelled="gen5",
                profile=profile,
                yaxis="y2",
            )
        )
    axes: dict[str, Any] = {
        "yaxis": dict(
            title=dict(text=f"tokens/s, measured ({'CPU' if measure == 'cpu' else 'wall'})"),
            rangemode="tozero",
            domain=[0.56, 1],
        ),
        "yaxis2": dict(title=dict(text="tokens/s, modelled"), rangemode="tozero", domain=[0, 0.44], anchor="x"),
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
            ]
        )
    return figure(
        title,
        height,
        dark,
        data,
        subtitle=subtitle,
        margin=MARGIN,
        hovermode="x unified",
        # the shared x axis under the bottom panel: anchored to the top one, its title sat between the two
        xaxis=dict(title=dict(text=AXIS_LABELS[axis]), anchor="y2"),
        **axes,
        **marks,
    )


def crossover_figure(curves: CrossoverCurves, dark: bool = False, height: int = 440) -> go.Figure:
    """Recompute vs swap for one victim on the target, by its length (log-log), crossovers marked."""
    title = f"Recompute or swap? One victim's cost by its length, modelled {curves.target}."
    subtitle = (
        f"Modelled, not measured. Recompute: what its re-prefill adds to a step of {curves.batch} decodes at "
        f"{curves.context} tokens (dotted: alone). Swap: out + back in, block {curves.block_size}."
    )
    lines = [
        ("recompute (in a batch)", curves.recompute_ms, "recompute", "solid"),
        ("recompute alone", curves.recompute_alone_ms, "recompute", "dot"),
        ("swap, batched copies", curves.swap_batched_ms, "swap", "dash"),
        ("swap, per-block copies", curves.swap_per_block_ms, "swap per-block", "dash"),
    ]
    data = [
        dict(
            type="scatter",
            x=curves.lengths,
            y=y,
            name=f"{name}, modelled",
            mode="lines+markers",
            line=dict(color=MODE_COLORS[mode], dash=dash, width=2),
            marker=dict(color=MODE_COLORS[mode], symbol="circle-open", size=7),
            hovertemplate=f"{name} (modelled)<br>%{{x}} tokens<br>%{{y:.3g}} ms<extra></extra>",
        )
        for name, y, mode, dash in lines
    ]
    notes = []
    for what, length in (("batched swap", curves.batched_from), ("per-block swap", curves.per_block_from)):
        notes.append(f"{what} cheaper from {length:,} tokens" if length else f"{what} never cheaper here")
    note = dict(
        text="; ".join(notes),
        showarrow=False,
        x=0.01,
        y=0.99,
        xref="paper",
        yref="paper",
        xanchor="left",
        yanchor="top",
        font=dict(color=colors(dark)["muted"], size=12),
    )
    return figure(
        title,
        height,
        dark,
        data,
        subtitle=subtitle,
        margin=MARGIN,
        annotations=[note],
        xaxis=log_axis("victim's sequence length (tokens)", curves.lengths),
        yaxis=log_axis("ms per preemption (log scale)", [y for t in data for y in t["y"]]),
    )
