"""The recompute tax across a sweep: a pure function of the sweep's runs DataFrame -> plotly Figure.

The tax is the share of all prefill work that recomputed tokens already computed once (their KV was
dropped by a recompute preemption): counted tokens, so the same on any machine and every repeat, beside the
share of prefill forward time (wall clock, the median of the repeats), which is measured on the sweep's device.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from pykv.viz.sweep_charts import AXIS_LABELS, MARGIN, MODE_COLORS
from pykv.viz.sweep_series import series_groups, symbol
from pykv.viz.theme import colors, figure

POLICY_DASH = {"last": "solid", "priority": "dot", "lcf": "dash", "sglang": "dashdot"}
TITLE = "The recompute tax: the share of prefill work that redid work already done, one line per series and policy."


def recompute_tax_figure(runs: pd.DataFrame, dark: bool = False, height: int = 460) -> go.Figure:
    axis = runs["axis"].iloc[0] if len(runs) else "num_gpu_blocks"
    devices = ", ".join(sorted(runs["device"].astype(str).unique())) if len(runs) else "—"
    subtitle = (
        f"Top: share of prefill tokens (counted, the same every repeat). Bottom: share of prefill forward time "
        f"(wall clock, measured on {devices}). 0% = no token was ever computed twice."
    )
    if runs.empty:
        return figure(
            TITLE,
            height,
            dark,
            [],
            subtitle=subtitle,
            margin=MARGIN,
            annotations=[
                dict(
                    text="No runs yet.",
                    showarrow=False,
                    x=0.5,
                    y=0.5,
                    xref="paper",
                    yref="paper",
                    font=dict(color=colors(dark)["muted"]),
                )
            ],
        )
    data = []
    for label, base_mode, profile, group in series_groups(runs):
        policy = str(group["preemption_victim"].iloc[0])
        line = dict(color=MODE_COLORS.get(base_mode), width=2, dash=POLICY_DASH.get(policy, "solid"))
        for i, column in enumerate(("recompute_tax", "recompute_tax_time")):
            data.append(
                dict(
                    type="scatter",
                    x=list(group["value"]),
                    y=list(group[column] * 100),
                    name=str(label),
                    legendgroup=str(label),
                    showlegend=i == 0,
                    mode="lines+markers",
                    line=line,
                    marker=dict(color=line["color"], size=7, symbol=symbol(profile)),
                    yaxis="y2" if i else "y",
                    hovertemplate=f"{label}<br>x=%{{x}}<br>%{{y:.1f}}%<extra></extra>",
                )
            )
    return figure(
        TITLE,
        height,
        dark,
        data,
        subtitle=subtitle,
        margin=MARGIN,
        hovermode="x unified",
        xaxis=dict(title=dict(text=AXIS_LABELS[axis]), anchor="y2"),
        yaxis=dict(title=dict(text="% of prefill tokens"), rangemode="tozero", domain=[0.55, 1]),
        yaxis2=dict(title=dict(text="% of prefill time"), rangemode="tozero", domain=[0, 0.45]),
    )
