"""The room's answers to a lesson step's prediction: one horizontal bar per choice, in the lesson's
order, its count printed on it::

    a   ██████ 6
    b   ██ 2                 before the reveal: every bar one colour
    c   ████████████ 12 ✓    after it: the right choice accented, outlined and ticked, the others muted

Colour is never the only cue: the right bar also carries a tick and an outline, and the title names
it. Pure function of plain data: no Streamlit, no lesson objects.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from pykv.viz.theme import FONT_PX, colors, figure, title_px

WAITING = "#0072B2"  # Okabe-Ito blue: every bar before the reveal
RIGHT = "#009E73"  # Okabe-Ito bluish green: the right choice once revealed
TICK = "✓"


def _whole_step(most: int, ticks: int = 6) -> int:
    """A tick step of 1, 2, 5, 10, 20, 50, ... giving at most about ``ticks`` ticks up to ``most`` (counts are
    whole numbers: no 0.5 ticks)."""
    step = 1
    while most / step > ticks:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def answers_figure(
    choices: Sequence[str],
    counts: Mapping[str, int],
    correct: str | None,
    dark: bool = False,
    height: int | None = None,
    floor_px: float | None = None,
) -> go.Figure:
    """Bars of ``counts`` (answers per choice; a choice missing from it has 0, a key that is no choice is
    ignored) in ``choices`` order, top to bottom. ``correct`` None: not revealed yet, all bars alike;
    otherwise the choice to highlight. ``floor_px``: its smallest text (the projector's floor), else 12 px.
    ValueError on repeated choices, a negative count or a ``correct`` that is not one of the choices."""
    choices = [str(c) for c in choices]
    if len(set(choices)) != len(choices):
        raise ValueError(f"the choices must be distinct, got {choices}")
    if correct is not None and correct not in choices:
        raise ValueError(f"the right answer {correct!r} is not one of the choices {choices}")
    values = [int(counts.get(c, 0)) for c in choices]
    if any(v < 0 for v in values):
        raise ValueError(f"answer counts cannot be negative, got {dict(zip(choices, values))}")
    c = colors(dark)
    font = max(FONT_PX, floor_px or 0)
    total = sum(values)
    revealed = correct is not None
    fills = [(RIGHT if choice == correct else c["cached"]) if revealed else WAITING for choice in choices]
    outlines = [c["outline"] if choice == correct else "rgba(0,0,0,0)" for choice in choices]
    texts = [f"{v} {TICK}" if choice == correct else str(v) for choice, v in zip(choices, values)]
    shares = [v / total if total else 0.0 for v in values]
    bar = dict(
        type="bar",
        orientation="h",
        x=values,
        y=choices,
        text=texts,
        textposition="outside",
        cliponaxis=False,
        textfont=dict(color=c["font"], size=font),
        customdata=shares,
        marker=dict(color=fills, line=dict(color=outlines, width=2)),
        hovertemplate="%{y}: %{x} answers (%{customdata:.0%})<extra></extra>",
    )
    answers = f"{total} answer{'s' if total != 1 else ''}"
    subtitle = f"{answers} · right answer: {TICK} {correct}" if revealed else f"{answers} · not revealed yet"
    layout: dict[str, Any] = dict(
        subtitle=subtitle,
        bargap=0.3,
        uniformtext=dict(minsize=font, mode="show"),  # a count is never shrunk to the bar's thickness
        showlegend=False,
        # a projector's chart (``floor_px``) is short: its title and subtitle close above the bars, no count axis
        # (each bar prints its count)
        margin=dict(l=8, r=48, t=56 if floor_px is None else round(title_px(floor_px) + 2.2 * floor_px), b=8),
        xaxis=dict(
            rangemode="tozero",
            range=None if total else [0, 1],
            tick0=0,
            dtick=_whole_step(max(values)),
            tickformat="d",
            showticklabels=floor_px is None,
            automargin=True,
            showgrid=True,
        ),
        yaxis=dict(type="category", autorange="reversed", automargin=True, ticksuffix="  "),
    )
    if not total:
        layout["annotations"] = [
            dict(
                text="No answers yet.",
                showarrow=False,
                x=0.5,
                y=0.5,
                xref="paper",
                yref="paper",
                font=dict(color=c["muted"]),
            )
        ]
    return figure("The room's answers", height or 90 + 40 * len(choices), dark, [bar], floor_px=floor_px, **layout)
