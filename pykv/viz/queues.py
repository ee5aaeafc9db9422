"""The scheduler's queues as lanes of request chips, in queue order (left = front of the queue).

A chip is the request's colour with its id inside; a preempted request carries a badge under the
chip: ``R2`` = preempted twice, last time by recompute; ``S1`` = once, by swap. Chips are rectangles in data
units (a slot each), not markers of a fixed pixel size: a narrow chart (a 1280x720 projector's column) shrinks
them with their slots instead of stacking 20 px markers on each other and on the lane labels.
"""

from __future__ import annotations

import plotly.graph_objects as go

from pykv.border.snapshot import RequestView, Snapshot
from pykv.viz.theme import colors, figure, request_color, text_color_on, text_px, tick_label_margin

LANES = ("WAITING", "RUNNING", "SWAPPED", "FINISHED")
MAX_CHIPS = 16  # per lane; older finished requests collapse into "+N earlier"
MODE_LETTER = {"recompute": "R", "swap": "S", "abort": "A"}
CHIP_HALF_WIDTH = 0.42  # of a slot: a gap between neighbours at any width
CHIP_TOP, CHIP_BOTTOM = -0.3, 0.24  # of a lane, around its centre (y grows downwards): room for the badge below


def last_preemption_modes(snapshot: Snapshot) -> dict[str, str]:
    """Request id -> mode of its latest preemption ("recompute", "swap" or "abort")."""
    modes: dict[str, str] = {}
    for p in snapshot.preemptions:
        modes[p.request_id] = p.mode
    return modes


def lane_members(snapshot: Snapshot) -> dict[str, list[str]]:
    finished = [r.request_id for r in snapshot.requests if r.status.startswith("finished")]
    return {
        "WAITING": list(snapshot.queues.get("waiting", [])),
        "RUNNING": list(snapshot.queues.get("running", [])),
        "SWAPPED": list(snapshot.queues.get("swapped", [])),
        "FINISHED": finished,
    }


def badge(view: RequestView | None, modes: dict[str, str]) -> str:
    if view is None or not view.num_preemptions:
        return ""
    return f"{MODE_LETTER.get(modes.get(view.request_id, ''), '?')}{view.num_preemptions}"


def chip_hover(view: RequestView | None, request_id: str, modes: dict[str, str]) -> str:
    if view is None:
        return f"req {request_id}"
    text = (
        f"<b>req {request_id}</b> · {view.status}<br>prompt {view.num_prompt_tokens} tok · "
        f"output {view.num_output_tokens} tok · computed {view.num_computed_tokens}"
    )
    if view.num_preemptions:
        text += f"<br>preempted {view.num_preemptions}× (last by {modes.get(request_id, '?')})"
    return text


def chip(x: int, y: int, fill: str, outline: str | None) -> dict:
    """One request's chip: its colour, outlined when it changed this step."""
    return dict(
        type="rect",
        x0=x - CHIP_HALF_WIDTH,
        x1=x + CHIP_HALF_WIDTH,
        y0=y + CHIP_TOP,
        y1=y + CHIP_BOTTOM,
        fillcolor=fill,
        line=dict(width=2.5 if outline else 0, color=outline or fill),
        layer="below",
    )


BADGE_KEY = ("badges: R2 = recomputed 2×,", "S1 = swapped 1×")  # short: the chart is ~300 px wide
KEY_FONT_PX = 10


def queues_figure(
    snapshot: Snapshot, dark: bool = False, changed: set[str] | None = None, height: int = 250, width: int | None = None
) -> go.Figure:
    """``width``: the px it is drawn at, where known (the projector's column), so that the badge key takes two
    lines rather than run past the edge."""
    c = colors(dark)
    views = {r.request_id: r for r in snapshot.requests}
    modes = last_preemption_modes(snapshot)
    members = lane_members(snapshot)
    xs, ys, texts, fills, hovers, badges_x, badges_y, badges = [], [], [], [], [], [], [], []
    notes, chips = [], []
    for y, lane in enumerate(LANES):
        ids = members[lane]
        if len(ids) > MAX_CHIPS:
            hidden = len(ids) - MAX_CHIPS
            ids = ids[-MAX_CHIPS:] if lane == "FINISHED" else ids[:MAX_CHIPS]
            notes.append(
                dict(
                    x=MAX_CHIPS - 0.3,
                    y=y,
                    text=f"+{hidden} {'earlier' if lane == 'FINISHED' else 'more'}",
                    showarrow=False,
                    xanchor="left",
                    font=dict(color=c["muted"]),
                )
            )
        for x, rid in enumerate(ids):
            fill = request_color(rid)
            xs.append(x)
            ys.append(y + (CHIP_TOP + CHIP_BOTTOM) / 2)
            texts.append(rid)
            fills.append(fill)
            hovers.append(chip_hover(views.get(rid), rid, modes))
            chips.append(chip(x, y, fill, c["outline"] if changed and rid in changed else None))
            label = badge(views.get(rid), modes)
            if label:
                badges_x.append(x)
                badges_y.append(y + 0.39)
                badges.append(label)
    data = [
        dict(
            type="scatter",
            x=xs,
            y=ys,
            mode="markers+text",
            text=texts,
            name="requests",
            showlegend=False,
            marker=dict(symbol="square", size=18, opacity=0),  # the hover target; the chip is a shape
            textfont=dict(color=[text_color_on(f) for f in fills], size=10),
            textposition="middle center",
            customdata=hovers,
            hovertemplate="%{customdata}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=badges_x,
            y=badges_y,
            mode="text",
            text=badges,
            name="preemptions",
            showlegend=False,
            textfont=dict(color=c["font"], size=10),
            hoverinfo="skip",
        ),
    ]
    slots = max([12] + [min(len(ids), MAX_CHIPS) for ids in members.values()])
    one_line = " ".join(BADGE_KEY)
    ticks = [f"{lane} ({len(members[lane])})" for lane in LANES]
    left = 4 + tick_label_margin(ticks)  # the lane names
    # the key starts at the figure's left edge, under the lane names, not the lanes: the whole width is its line
    wrapped = width is not None and text_px(len(one_line), KEY_FONT_PX) > width - 8
    key = dict(
        x=0,
        y=0,
        xref="paper",
        yref="paper",
        yanchor="top",
        xanchor="left",
        showarrow=False,
        yshift=-2,
        xshift=4 - left,
        text="<br>".join(BADGE_KEY) if wrapped else one_line,
        align="left",
        font=dict(size=KEY_FONT_PX, color=c["muted"]),
    )
    return figure(
        "Queues · front on the left",
        height,
        dark,
        data,
        showlegend=False,
        annotations=notes + [key],
        xaxis=dict(visible=False, range=[-0.7, slots + 1.2], fixedrange=True),
        yaxis=dict(
            tickmode="array",
            tickvals=list(range(len(LANES))),
            fixedrange=True,
            range=[len(LANES) - 0.45, -0.55],
            ticktext=ticks,
            showgrid=False,
            zeroline=False,
            automargin=True,
        ),
        shapes=[
            dict(
                type="rect",
                xref="paper",
                x0=0,
                x1=1,
                y0=y - 0.42,
                y1=y + 0.48,
                fillcolor=c["lane"],
                line=dict(width=0),
                layer="below",
            )
            for y in range(len(LANES))
        ]
        + chips,
        margin=dict(l=left, r=4, t=30, b=36 if wrapped else 22),
    )
