"""The run timeline: every recorded step at a glance, in stacked panels that share the step axis.

    KV usage (%)           device pool and CPU pool
    Queues                 running / waiting / swapped
    Preemptions            a marker per mode at the steps that preempted (R recompute, S swap, A abort)
    Recomputed tokens      cumulative (pykv:recomputed_tokens_total)
    Tokens per step        report.num_batched_tokens
    Throughput             tokens / measured step time, on the device named in the panel title

The step on screen is one dashed vertical line. Every point sits at x = its step, so a click maps
back to a step (:func:`selected_step`).

Built for long runs (3,000 steps in well under 50 ms): one pass over the history into float32
arrays, one trace per series placed by ``x0``/``dx`` (no x arrays), no per-point shapes or
annotations; plotly writes numpy arrays as base64, which keeps the JSON small. The panels are laid
out by hand: ``make_subplots`` alone would cost more than the whole figure.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from pykv.border.metric_names import CPU_CACHE_USAGE, NUM_REQUESTS_SWAPPED, RECOMPUTED_TOKENS, Metric
from pykv.border.snapshot import Snapshot
from pykv.viz.queues import MODE_LETTER
from pykv.viz.theme import colors, figure, text_color_on, tick_label_margin

# Okabe-Ito hues, each mode also with its letter. Swap shares the swapped queue's and the CPU pool's
# colour; recompute shares the recomputed tokens'.
MODE_COLOR = {"recompute": "#D55E00", "swap": "#56B4E9", "abort": "#CC79A7"}
MODES = tuple(MODE_LETTER)  # lane order of the preemption panel, top to bottom
SERIES_COLOR = {
    "gpu": "#0072B2",
    "cpu": "#56B4E9",
    "running": "#009E73",
    "waiting": "#E69F00",
    "swapped": "#56B4E9",
    "recomputed": "#D55E00",
    "tokens": "#0072B2",
    "throughput": "#009E73",
}
SERIES = tuple(SERIES_COLOR)
# (panel, relative height); the preemption panel is a strip of one lane per mode seen.
PANELS = (
    ("kv", 1.0),
    ("queues", 1.0),
    ("preemptions", 0.55),
    ("recomputed", 0.75),
    ("tokens", 0.75),
    ("throughput", 0.75),
)
ROW = {name: i + 1 for i, (name, _) in enumerate(PANELS)}
GAP_PX = 20  # between panels: room for the next panel's title
# left: the panels' tick labels, which plotly keeps to 4 characters at nticks=3 ("5000", "10k", "100k", "2M");
# right: the per-panel legends; bottom: the step axis
MARGIN = dict(l=8 + tick_label_margin(["100k"]), r=118, t=40, b=40)
MIN_STEPS_SHOWN = 10  # a short run still gets an axis of whole steps
LANE_PX = 16  # the preemption strip's lanes at least this far apart: a 12 px square and a gap (R above S, apart)
LEGEND_FONT_PX = 10
LEGEND_ROW_PX = 19  # one entry of a legend at LEGEND_FONT_PX, as plotly.js spaces them
LEGEND_PAD_PX = 8  # above a legend's first entry


@dataclass(frozen=True)
class TimelineSeries:
    """What the panels draw, indexed by step (NaN = nothing to draw at that step)."""

    cols: dict[str, np.ndarray]  # SERIES name -> float32 array, one value per step
    events: dict[str, dict[int, list[str]]]  # mode -> step -> request ids preempted at that step
    has_cpu: bool  # some step had a CPU pool
    has_swapped: bool  # the profile has a SWAPPED queue (V0), or something was swapped
    device: str  # where the step times were measured (the latest step's)


def cpu_usage(snapshot: Snapshot) -> float:
    """CPU pool usage, 0-1: V0's gauge when exported, else counted from the pool's blocks (the CPU
    pool caches nothing, so a block that is not free is in use). NaN when there is no CPU pool."""
    gauge = snapshot.optional_metric(CPU_CACHE_USAGE)
    if gauge is not None:
        return gauge
    cpu = [b for b in snapshot.blocks if b.pool == "cpu"]
    return sum(b.state != "free" for b in cpu) / len(cpu) if cpu else math.nan


def timeline_series(history: Sequence[Snapshot]) -> TimelineSeries:
    """Every panel's data in one pass over the history (a tuple per step, one array conversion at the
    end: writing numpy items one by one costs more than the whole pass)."""
    nan = math.nan
    rows: list[tuple[float, ...]] = []  # one per step, in SERIES order
    events: dict[str, dict[int, list[str]]] = {mode: {} for mode in MODES}
    # A CPU pool is part of the config, so a Lab's history has it at every step or at none: the ends
    # tell (a block read per step costs more than the rest of the pass, the blocks being scattered).
    has_cpu = any(s.blocks and s.blocks[-1].pool == "cpu" for s in ((history[0], history[-1]) if history else ()))
    has_swapped = False
    usage_of: dict[str, Metric] = {}  # profile -> its device-pool gauge, looked up once per profile
    for i, snap in enumerate(history):
        q, report = snap.queues, snap.report
        cpu = cpu_usage(snap) * 100 if has_cpu else nan
        swapped = len(q.get("swapped", ()))
        has_swapped = (
            has_swapped or swapped > 0 or (not has_swapped and snap.optional_metric(NUM_REQUESTS_SWAPPED) is not None)
        )
        tokens = throughput = nan  # step 0 ran nothing: gaps
        if report is not None:
            tokens = report.num_batched_tokens
            if report.step_time_s > 0:
                throughput = tokens / report.step_time_s
            for p in report.preempted:
                events.setdefault(p.mode, {}).setdefault(i, []).append(p.request_id)
        usage = usage_of.get(snap.vllm_profile) or usage_of.setdefault(snap.vllm_profile, snap.kv_usage_metric())
        rows.append(
            (
                snap.metric(usage) * 100,
                cpu,
                len(q.get("running", ())),
                len(q.get("waiting", ())),
                swapped,
                snap.metric(RECOMPUTED_TOKENS),
                tokens,
                throughput,
            )
        )
    table = np.array(rows, dtype=np.float32).reshape(len(rows), len(SERIES))
    cols = {name: np.ascontiguousarray(table[:, j]) for j, name in enumerate(SERIES)}
    last = history[-1] if history else None
    device = "?" if last is None else last.report.device if last.report is not None else last.device
    return TimelineSeries(cols, events, has_cpu, has_swapped, device)


def _axes(row: int) -> tuple[str, str, str, str]:
    """Trace refs and layout keys of a panel: ('x', 'y', 'xaxis', 'yaxis') for row 1, then 'x2', ..."""
    n = "" if row == 1 else str(row)
    return f"x{n}", f"y{n}", f"xaxis{n}", f"yaxis{n}"


def _plot_px(height: int) -> float:
    return max(60.0, height - MARGIN["t"] - MARGIN["b"])


def _domains(height: int, lanes: int = 1) -> list[tuple[float, float]]:
    """Each panel's vertical (bottom, top), top panel first; the gaps are fixed in pixels, and the preemption strip
    gets at least ``LANE_PX`` per lane (its share alone put R and S on top of each other in a short figure)."""
    plot_px = _plot_px(height)
    gap = min(0.08, GAP_PX / plot_px)
    usable = 1.0 - gap * (len(PANELS) - 1)
    weights = dict(PANELS)
    total = sum(weights.values())
    strip = min(usable / 2, max(usable * weights["preemptions"] / total, lanes * LANE_PX / plot_px))
    per_weight = (usable - strip) / (total - weights["preemptions"])
    domains, top = [], 1.0
    for name, weight in PANELS:
        bottom = max(0.0, top - (strip if name == "preemptions" else per_weight * weight))
        domains.append((bottom, top))
        top = bottom - gap
    return domains


def _line(
    y: np.ndarray, panel: str, name: str, color: str, hover: str, legend: str | None = None, fill: bool = False
) -> dict:
    """A series indexed by step, placed by x0 = 0, dx = 1 (no x array to send)."""
    xa, ya, _, _ = _axes(ROW[panel])
    return dict(
        type="scatter",
        x0=0,
        dx=1,
        y=y,
        xaxis=xa,
        yaxis=ya,
        name=name,
        mode="lines+markers",
        line=dict(color=color, width=1.6),
        marker=dict(color=color, size=4),
        fill="tozeroy" if fill else None,
        showlegend=legend is not None,
        legend=legend or "legend",
        hovertemplate=f"step %{{x}} · {hover}<extra></extra>",
        unselected=dict(marker=dict(opacity=1)),
    )  # a click must not grey out every other point


LEGENDS = {"legend": "kv", "legend2": "queues", "legend3": "preemptions"}  # legend -> the panel it stands beside

# Up to this many steps a 12 px square per step fits a ~1000 px timeline; past it neighbours overlap ("RR"), so
# the squares shrink and lose their letter (the lane's tick label and the legend still name the mode).
LETTERED_UP_TO_STEPS = 80


def _preemption_traces(events: dict[str, dict[int, list[str]]], lanes: list[str], steps: int) -> list[dict]:
    """One trace per mode: a square with the mode's letter at each step that preempted by it."""
    xa, ya, _, _ = _axes(ROW["preemptions"])
    lettered = steps <= LETTERED_UP_TO_STEPS
    traces = []
    for lane, mode in enumerate(lanes):
        at = events.get(mode, {})
        color = MODE_COLOR.get(mode, "#999999")
        letter = MODE_LETTER.get(mode, "?")
        traces.append(
            dict(
                type="scatter",
                x=np.fromiter(at, dtype=np.int32, count=len(at)),
                y=np.full(len(at), lane, np.int8),
                xaxis=xa,
                yaxis=ya,
                mode="markers+text" if lettered else "markers",
                name=f"{letter} = {mode}",
                legend="legend3",
                showlegend=bool(at),
                text=[letter] * len(at) if lettered else None,
                textposition="middle center",
                textfont=dict(color=text_color_on(color), size=9),
                marker=dict(symbol="square", size=12 if lettered else 7, color=color, line=dict(width=0)),
                hovertext=[f"{len(ids)}× {mode}: req {html.escape(', '.join(ids))}" for ids in at.values()],
                hovertemplate="step %{x} · %{hovertext}<extra></extra>",
                unselected=dict(marker=dict(opacity=1)),
            )
        )
    return traces


def timeline_figure(history: Sequence[Snapshot], cursor: int, *, dark: bool = False, height: int = 360) -> go.Figure:
    """The run so far (``history[k]`` = the snapshot after step k) with step ``cursor`` marked."""
    c = colors(dark)
    s = timeline_series(history)
    cols, n = s.cols, len(history)
    lanes = [mode for mode in s.events if s.events[mode]] or ["recompute"]  # modes seen, in MODES order
    domains = _domains(height, len(lanes))

    data = [_line(cols["gpu"], "kv", "device pool", SERIES_COLOR["gpu"], "device pool %{y:.0f}%", "legend", True)]
    if s.has_cpu:
        data.append(_line(cols["cpu"], "kv", "CPU pool", SERIES_COLOR["cpu"], "CPU pool %{y:.0f}%", "legend"))
    queues = ("running", "waiting", "swapped") if s.has_swapped else ("running", "waiting")
    data += [_line(cols[q], "queues", q, SERIES_COLOR[q], f"{q} %{{y:.0f}}", "legend2") for q in queues]
    data += _preemption_traces(s.events, lanes, n)
    data += [
        _line(
            cols["recomputed"],
            "recomputed",
            "recomputed tokens",
            SERIES_COLOR["recomputed"],
            "%{y:,.0f} tokens recomputed so far",
        ),
        _line(cols["tokens"], "tokens", "tokens per step", SERIES_COLOR["tokens"], "%{y:,.0f} tokens this step"),
        _line(
            cols["throughput"],
            "throughput",
            "throughput",
            SERIES_COLOR["throughput"],
            f"%{{y:,.0f}} tokens/s measured on {s.device}",
        ),
    ]

    titles = {
        "kv": "KV usage (%)",
        "queues": "Queues (requests)",
        "preemptions": "Preemptions, by mode",
        "recomputed": "Recomputed tokens (cumulative)",
        "tokens": "Tokens per step",
        "throughput": f"Throughput (tokens/s, measured on {s.device})",
    }
    last_x = max(n - 1, MIN_STEPS_SHOWN)
    layout: dict[str, Any] = {}
    annotations = []
    for name, row in ROW.items():
        xa, ya, xkey, ykey = _axes(row)
        bottom, top = domains[row - 1]
        bottom_row = row == len(PANELS)
        layout[xkey] = dict(
            anchor=ya,
            domain=[0, 1],
            range=[-0.5, last_x + 0.5],
            showticklabels=bottom_row,
            title=dict(text="step") if bottom_row else None,
            **({"matches": "x"} if row > 1 else {}),
        )
        layout[ykey] = dict(
            anchor=xa,
            domain=[bottom, top],
            automargin=True,
            nticks=3,
            fixedrange=True,
            autorangeoptions=dict(include=[0, 4]),
        )  # an all-zero panel reads 0..4, not 0..1
        annotations.append(
            dict(
                text=titles[name],
                xref="paper",
                yref="paper",
                x=0,
                y=top,
                xanchor="left",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=11, color=c["muted"]),
            )
        )
    layout["yaxis"] = layout["yaxis"] | dict(range=[0, 105], tickvals=[0, 50, 100], nticks=None, autorangeoptions=None)
    pre = _axes(ROW["preemptions"])[3]
    layout[pre] = layout[pre] | dict(
        range=[len(lanes) - 0.4, -0.6],
        tickvals=list(range(len(lanes))),
        nticks=None,
        ticktext=[MODE_LETTER.get(m, "?") for m in lanes],
        autorangeoptions=None,
        showgrid=False,
        zeroline=False,
    )
    if not any(s.events.values()):
        middle = sum(domains[ROW["preemptions"] - 1]) / 2
        annotations.append(
            dict(
                text="none yet",
                xref="paper",
                yref="paper",
                x=0.5,
                y=middle,
                showarrow=False,
                font=dict(size=10, color=c["muted"]),
            )
        )
    # each legend beside its panel, or under the one above where that one runs longer than its panel (the queues'
    # three entries ran over the preemptions' "R = recompute" in a short figure)
    shown = {legend: sum(1 for t in data if t["showlegend"] and t["legend"] == legend) for legend in LEGENDS}
    free_from = 1.0
    for legend, panel in LEGENDS.items():
        y = min(domains[ROW[panel] - 1][1], free_from)
        free_from = y - (LEGEND_PAD_PX + shown[legend] * LEGEND_ROW_PX) / _plot_px(height)
        layout[legend] = dict(
            x=1.01, xanchor="left", y=y, yanchor="top", font=dict(size=LEGEND_FONT_PX), tracegroupgap=0
        )

    cursor = min(max(cursor, 0), max(n - 1, 0))
    # One dashed segment per panel, from its bottom to its top: one line down the whole figure crossed the panel titles
    # in the gaps between them ("Throughput (tokens/s, ...)" struck through while the cursor sat under it).
    shapes = [
        dict(
            type="line",
            xref="x",
            yref="paper",
            x0=cursor,
            x1=cursor,
            y0=bottom,
            y1=top,
            layer="above",
            line=dict(color=c["font"], width=1.5, dash="dash"),
        )
        for bottom, top in domains
    ]
    return figure(
        f"Run timeline · step {cursor} of {max(n - 1, 0)} recorded (dashed line)",
        height,
        dark,
        data,
        annotations=annotations,
        shapes=shapes,
        hovermode="closest",
        margin=MARGIN,
        clickmode="event+select",
        dragmode=False,
        **layout,
    )


def selected_step(selection: dict | None) -> int | None:
    """The step a timeline click selected, from ``st.plotly_chart(..., on_select=...)``'s state
    (``{"selection": {"points": [{"x": ..., "customdata": ...}, ...]}}``); None when nothing (or
    nothing that reads as a step: a whole number >= 0) is selected. With several points (shift-click)
    the last one wins. The state comes from the browser, so every field is checked."""
    try:
        points = (selection or {}).get("selection", {}).get("points") or []
    except AttributeError:  # not a mapping
        return None
    for point in reversed(points if isinstance(points, list) else []):
        if not isinstance(point, dict):
            continue
        for value in (point.get("customdata"), point.get("x")):
            if isinstance(value, list) and value:  # customdata may carry several fields: the step first
                value = value[0]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            if value >= 0 and float(value).is_integer():
                return int(value)
    return None
