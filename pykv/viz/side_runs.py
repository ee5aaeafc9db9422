"""A lesson's side runs as one compact chart: three small panels side by side, one bar per run::

    preemptions        recomputed tokens      wall time (s)
    ▇ short  3         ▇ short  96            ▇ short 0.41
    ▇ long  12         ▇ long  640            ▇ long  1.20

What the projector shows instead of the side-runs table (the table stays under "Side runs"), and what
a step whose ``configure`` left the engine at step 0 shows instead of an empty pool. Pure function of
the runs' numbers: no Streamlit, no lesson objects.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from pykv.viz.theme import colors, figure, request_color

PANELS = (
    ("preemptions", "preemptions", "{:d}"),
    ("recomputed_tokens", "recomputed tokens", "{:d}"),
    ("wall_s", "wall time (s, measured)", "{:.2f}"),
)
# Axis titles break in two so the three panels' titles stay apart in a 350 px wide chart (a 720p projector).
AXIS_TITLES = {
    "preemptions": "preemptions",
    "recomputed_tokens": "tokens<br>recomputed",
    "wall_s": "wall time<br>(s, measured)",
}


def side_runs_figure(
    names: Sequence[str], values: Mapping[str, Mapping[str, float]], device: str, dark: bool = False, height: int = 260
) -> go.Figure:
    """``values[name][field]`` for each run ``name`` (fields: PANELS' first items). ValueError when a run
    lacks one of them."""
    names = [str(n) for n in names]
    for name in names:
        missing = [field for field, _, _ in PANELS if field not in values.get(name, {})]
        if missing:
            raise ValueError(f"side run {name!r} has no {', '.join(missing)}")
    c = colors(dark)
    data: list[dict] = []
    layout: dict[str, Any] = {}
    for i, (field, label, fmt) in enumerate(PANELS, 1):
        numbers = [values[name][field] for name in names]
        axis = "" if i == 1 else str(i)
        data.append(
            dict(
                type="bar",
                orientation="h",
                y=names,
                x=numbers,
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
                marker=dict(color=[request_color(str(k)) for k in range(len(names))]),
                text=[fmt.format(int(v) if fmt == "{:d}" else v) for v in numbers],
                textposition="auto",
                cliponaxis=False,
                showlegend=False,
                name=label,
                hovertemplate=f"%{{y}}: %{{x}} {label}<extra></extra>",
            )
        )
        left, right = (i - 1) / 3 + 0.02, i / 3 - 0.02
        # Three ticks at most, tokens in SI ("1.2k"): a panel is ~110 px wide on a 720p projector, where plotly's
        # own ticks ran into each other ("1 0"). Not the preemptions: a count up to 1 would tick "500m".
        ticks = dict(nticks=3, tickformat="~s" if field == "recomputed_tokens" else None)
        layout[f"xaxis{axis}"] = dict(
            domain=[left, right],
            title=dict(text=AXIS_TITLES[field], font=dict(size=12)),
            rangemode="tozero",
            gridcolor=c["grid"],
            **ticks,
        )
        layout[f"yaxis{axis}"] = dict(anchor=f"x{axis}", autorange="reversed", showticklabels=i == 1)
    return figure(
        f"Side runs to completion<br><sup>each on its own engine · measured on {device}</sup>",
        height,
        dark,
        data,
        margin=dict(l=80, r=20, t=50, b=64),
        **layout,
    )
