"""A lesson's side runs as one compact chart: three small panels side by side, one bar per run::

    preemptions        recomputed tokens      wall time (s)
    ▇ short  3         ▇ short  96            ▇ short 0.41
    ▇ long  12         ▇ long  640            ▇ long  1.20

What the projector shows instead of the side-runs table (the table stays under "Side runs"), and what
a step whose ``configure`` left the engine at step 0 shows instead of an empty pool. Pure function of
the runs' numbers: no Streamlit, no lesson objects.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from pykv.viz.theme import FONT_PX, colors, figure, request_color, text_px, tick_label_margin, title_px

PANELS = (
    ("preemptions", "preemptions", "{:d}"),
    ("recomputed_tokens", "recomputed tokens", "{:d}"),
    ("wall_s", "wall time (s, measured)", "{:.2f}"),
)
COUNTS = frozenset({"preemptions", "recomputed_tokens"})  # whole numbers: whole ticks, never "500m" or "1.2k"
# Axis titles break in two so the three panels' titles stay apart in a 340 px wide chart (a 720p projector).
AXIS_TITLES = {
    "preemptions": "preemptions",
    "recomputed_tokens": "tokens<br>recomputed",
    "wall_s": "wall time<br>(s, measured)",
}
NAME_CHARS = 8  # a run's name longer than this breaks after its "_"s (the names take the panels' width)
NICE = (1, 2, 3, 5, 7.5)  # an axis ends at one of these times a power of ten
LABEL_GAP_PX = 10  # the least room between two panels' tick labels or axis titles


def axis_end(largest: float, whole: bool) -> float:
    """Where a panel's axis ends: the first 1, 2, 3, 5, 7.5 x 10^k at or above ``largest`` (a whole number for a
    count; 1 for nothing at all), so its bars fill most of it and its end tick is a round number."""
    if largest <= 0:
        return 1
    power = 10.0 ** math.floor(math.log10(largest))
    for scale in (power, power * 10):
        for m in NICE:
            end = m * scale
            if end >= largest * (1 - 1e-9) and (not whole or end == int(end)):
                return int(end) if whole else float(f"{end:.12g}")
    return largest


def name_lines(name: str) -> str:
    """A run's name as its axis label: a long snake_case name on lines of NAME_CHARS or so ("chunked_<br>cached")."""
    if len(name) <= NAME_CHARS or "_" not in name:
        return name
    lines = [""]
    for part in name.split("_"):
        if lines[-1] and len(lines[-1]) + len(part) + 1 > NAME_CHARS:
            lines.append("")
        lines[-1] += part + "_"
    return "<br>".join(lines)[:-1]


def tick_text(value: float, whole: bool) -> str:
    return f"{int(value):,}" if whole else f"{value:g}"


def _gap_px(plot_px: float, ends: list[str], titles: list[str], font_px: float) -> float:
    """The px between two panels that keeps a panel's end tick off the next one's "0", and their axis titles
    (centred on panels narrower than they are) off each other."""

    def width(text: str) -> float:
        return max(text_px(len(line), font_px) for line in text.split("<br>"))

    gap: float = LABEL_GAP_PX
    for _ in range(4):  # the panels narrow as the gap grows: a few rounds settle it
        panel = (plot_px - 2 * gap) / 3
        over = [max(0.0, (width(t) - panel) / 2) for t in titles]
        ticks = max((width(end) + width("0")) / 2 for end in ends[:-1])
        gap = max(ticks, *(over[i] + over[i + 1] for i in range(2))) + LABEL_GAP_PX
    return gap


def _text_positions(numbers: list[float], texts: list[str], end: float, panel_px: float, font: float) -> list[str]:
    """Each bar's number inside it where it fits (estimated), else after it: plotly's "auto" kept a number that did
    not fit inside a short bar, overflowing its start, once it may not shrink it (``uniformtext``)."""
    return [
        "inside" if text_px(len(text), font) + 6 <= value / end * panel_px else "outside"
        for value, text in zip(numbers, texts)
    ]


def side_runs_figure(
    names: Sequence[str],
    values: Mapping[str, Mapping[str, float]],
    device: str,
    dark: bool = False,
    height: int = 260,
    width: int | None = None,
    floor_px: float | None = None,
) -> go.Figure:
    """``values[name][field]`` for each run ``name`` (fields: PANELS' first items). ``width``: the px it is drawn
    at, where known (the projector's column), which the panels share with gaps that keep their labels apart;
    ``floor_px``: its smallest text (the projector's floor), else 12 px. Each panel's axis ticks only 0 and its end
    (``axis_end``), whole numbers for counts. ValueError when a run lacks a field."""
    names = [str(n) for n in names]
    for name in names:
        missing = [field for field, _, _ in PANELS if field not in values.get(name, {})]
        if missing:
            raise ValueError(f"side run {name!r} has no {', '.join(missing)}")
    c = colors(dark)
    font = max(FONT_PX, floor_px or 0)
    labels = [name_lines(n) for n in names]
    left, right = tick_label_margin([line for n in labels for line in n.split("<br>")], font), 20
    ends = [axis_end(max((values[n][field] for n in names), default=0), field in COUNTS) for field, _, _ in PANELS]
    ends_text = [tick_text(end, field in COUNTS) for end, (field, _, _) in zip(ends, PANELS)]
    gap = 0.04  # of the plot's width, where the width is not known
    if width is not None:
        plot_px = max(1, width - left - right)
        gap = min(0.3, _gap_px(plot_px, ends_text, [AXIS_TITLES[f] for f, _, _ in PANELS], font) / plot_px)
    panel = (1 - 2 * gap) / 3
    data: list[dict] = []
    layout: dict[str, Any] = {}
    panel_px = None if width is None else panel * (width - left - right)
    for i, ((field, label, fmt), end, end_label) in enumerate(zip(PANELS, ends, ends_text)):
        numbers = [values[name][field] for name in names]
        texts = [fmt.format(int(v) if fmt == "{:d}" else v) for v in numbers]
        axis = "" if i == 0 else str(i + 1)
        data.append(
            dict(
                type="bar",
                orientation="h",
                y=names,
                x=numbers,
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
                marker=dict(color=[request_color(str(k)) for k in range(len(names))]),
                text=texts,
                textposition="auto" if panel_px is None else _text_positions(numbers, texts, end, panel_px, font),
                textangle=0,  # plotly turns a number that fits a narrow bar only sideways: across it, or after it
                textfont=dict(size=font),
                cliponaxis=False,
                showlegend=False,
                name=label,
                hovertemplate=f"%{{y}}: %{{x}} {label}<extra></extra>",
            )
        )
        start = i * (panel + gap)
        # Two ticks, 0 and the axis's end: a panel is ~70 px wide on a 720p projector, where plotly's own ticks ran
        # into each other and into the next panel's ("0 0.5 1 0 500m 1"), and a count ticked "500m" in SI.
        layout[f"xaxis{axis}"] = dict(
            domain=[start, min(1, start + panel)],
            title=dict(text=AXIS_TITLES[field], font=dict(size=font)),
            range=[0, end],
            tickmode="array",
            tickvals=[0, end],
            ticktext=[tick_text(0, field in COUNTS), end_label],
            tickfont=dict(size=font),
            gridcolor=c["grid"],
        )
        layout[f"yaxis{axis}"] = dict(
            anchor=f"x{axis}",
            autorange="reversed",
            showticklabels=i == 0,
            tickmode="array",
            tickvals=names,
            ticktext=labels,
            tickfont=dict(size=font),
        )
    return figure(
        "Side runs to completion",
        height,
        dark,
        data,
        subtitle=f"each on its own engine · measured on {device}",
        floor_px=floor_px,
        # a bar's number that does not fit inside goes outside, at the chart's size, never shrunk to fit
        uniformtext=dict(minsize=font, mode="show"),
        margin=dict(
            l=left,
            r=right,
            t=round(title_px(floor_px) * 2 + font * 1.5),
            b=round(font * 5.3),
        ),
        **layout,
    )
