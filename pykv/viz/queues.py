"""The scheduler's queues as lanes of request chips, in queue order (left = front of the queue).

A chip is the request's colour with its id inside; a preempted request carries a badge under the
chip: ``R2`` = preempted twice, last time by recompute; ``S1`` = once, by swap. Chips are rectangles in data
units (a slot each), not markers of a fixed pixel size: a narrow chart (a 1280x720 projector's column) shrinks
them with their slots instead of stacking 20 px markers on each other and on the lane labels. Where the chart's
width is known, a slot is no narrower than its id needs unless the queue is too long for that (``slot_px``); on a
projector never: a lane longer than the chart holds shows the front of the queue and "+N more" (FINISHED: the
latest, and "+N earlier").
"""

from __future__ import annotations

import plotly.graph_objects as go

from pykv.border.snapshot import RequestView, Snapshot
from pykv.viz.theme import (
    CHAR_EM,
    FONT_PX,
    colors,
    figure,
    request_color,
    text_color_on,
    text_px,
    tick_label_margin,
    title_px,
)

LANES = ("WAITING", "RUNNING", "SWAPPED", "FINISHED")
MAX_CHIPS = 16  # per lane; older finished requests collapse into "+N earlier"
MIN_SLOTS = 12  # a lane's length in chips, however few it holds (where the width allows: slot_px)
CHIP_PAD_PX = 8  # a chip's least room around its id
MODE_LETTER = {"recompute": "R", "swap": "S", "abort": "A"}
CHIP_HALF_WIDTH = 0.42  # of a slot: a gap between neighbours at any width
LANE_TOP, LANE_BOTTOM = -0.42, 0.48  # a lane's band, around its centre (y grows downwards)
LINE_EM = 1.2  # a line of text's height, in ems


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


def chip_rows(lane_px: float, font_px: float) -> tuple[float, float, float]:
    """(chip top, chip bottom, badge centre) in lanes from a lane's centre, for lanes ``lane_px`` apart and text of
    ``font_px``: the badge's line ends on the band's bottom edge and the chip ends above it, tall enough for its id
    (the projector's 14 px text took a lane's whole height at the learner's proportions)."""
    line = LINE_EM * font_px / lane_px
    badge = LANE_BOTTOM - line / 2
    bottom = badge - line / 2 - 0.02
    return max(LANE_TOP + 0.02, min(-0.3, bottom - line - 0.1)), bottom, badge


def chip(x: int, y: int, fill: str, outline: str | None, rows: tuple[float, float, float]) -> dict:
    """One request's chip (``rows``: ``chip_rows``): its colour, outlined when it changed this step."""
    return dict(
        type="rect",
        x0=x - CHIP_HALF_WIDTH,
        x1=x + CHIP_HALF_WIDTH,
        y0=y + rows[0],
        y1=y + rows[1],
        fillcolor=fill,
        line=dict(width=2.5 if outline else 0, color=outline or fill),
        layer="below",
    )


BADGE_KEY = ("badges: R2 = recomputed 2×,", "S1 = swapped 1×")  # short: the chart is ~300 px wide
SHORT_KEY = "R2 = 2 recomputes, S1 = 1 swap"  # one line where the key would take two (a lane's height, at 720p)
KEY_FONT_PX = 10
CHIP_FONT_PX = 10


def slot_px(id_chars: int, badge_chars: int, chip_px: float) -> float:
    """A slot's least width: its chip (2 x CHIP_HALF_WIDTH of it) holds ``id_chars`` characters of ``chip_px`` text
    (the longest id) with CHIP_PAD_PX to spare, and the badge under it (``badge_chars``) keeps off its neighbour's."""
    return max((id_chars * CHAR_EM * chip_px + CHIP_PAD_PX) / (2 * CHIP_HALF_WIDTH), text_px(badge_chars, chip_px) + 4)


def _slots(
    members: dict[str, list[str]], plot_px: float | None, least_px: float, note_px: float, cut: bool
) -> tuple[int, int]:
    """(slots a lane is long, chips a lane shows at most): as many slots as the longest lane needs (MIN_SLOTS at
    least, MAX_CHIPS chips at most), where the width is known no more empty ones than ``plot_px`` holds at
    ``least_px`` each. ``cut``: no more slots at all than that either (a projector: the room cannot hover a sliver
    for its id), a lane cut short keeping room for its "+N more" (at ``note_px``) after its chips."""
    longest = min(MAX_CHIPS, max(len(ids) for ids in members.values()))
    if plot_px is None:
        return max(MIN_SLOTS, longest), MAX_CHIPS
    room = max(2, int(plot_px / least_px - 1.9))  # the x range: 0.7 of a slot before the slots, 1.2 after
    if longest <= room or not cut:
        return max(min(MIN_SLOTS, room), longest), MAX_CHIPS
    note = max(len(note_text(lane, len(ids))) for lane, ids in members.items())
    # a note starts 0.3 of a slot before its lane's last chip's slot ends, and may use the range's 1.2 after the slots
    shown = int(room + 1.5 - text_px(note, note_px) / (plot_px / (room + 1.9)))
    return room, max(1, min(MAX_CHIPS, shown))


def note_text(lane: str, hidden: int) -> str:
    return f"+{hidden} {'earlier' if lane == 'FINISHED' else 'more'}"


def queues_figure(
    snapshot: Snapshot,
    dark: bool = False,
    changed: set[str] | None = None,
    height: int = 250,
    width: int | None = None,
    floor_px: float | None = None,
) -> go.Figure:
    """``width``: the px it is drawn at, where known (the projector's column, a learner's), so that the badge key
    is shorter (or takes two lines) rather than run past the edge and a chip is wide enough for its id;
    ``floor_px``: its smallest text (the projector's floor), else 10 px in the chips and the key."""
    c = colors(dark)
    chip_px, key_px = max(CHIP_FONT_PX, floor_px or 0), max(KEY_FONT_PX, floor_px or 0)
    lane_px = max(FONT_PX, floor_px or 0)
    views = {r.request_id: r for r in snapshot.requests}
    modes = last_preemption_modes(snapshot)
    members = lane_members(snapshot)
    ticks = [f"{lane} ({len(members[lane])})" for lane in LANES]
    left = 4 + tick_label_margin(ticks, lane_px)  # the lane names
    every_id = [rid for ids in members.values() for rid in ids]
    id_chars = max((len(rid) for rid in every_id), default=1)
    badge_chars = max((len(badge(views.get(rid), modes)) for rid in every_id), default=0)
    plot_px = None if width is None else width - left - 4
    slots, shown = _slots(members, plot_px, slot_px(id_chars, badge_chars, chip_px), lane_px, cut=floor_px is not None)
    # the key starts at the figure's left edge, under the lane names, not the lanes: the whole width is its line
    key_text = " ".join(BADGE_KEY)
    if width is not None and text_px(len(key_text), key_px) > width - 8:
        key_text = SHORT_KEY if text_px(len(SHORT_KEY), key_px) <= width - 8 else "<br>".join(BADGE_KEY)
    wrapped = "<br>" in key_text
    key_line = round(key_px * 1.4)
    top, bottom = round(30 * title_px(floor_px) / title_px(None)), (2 if wrapped else 1) * key_line + 8
    rows = chip_rows((height - top - bottom) / (len(LANES) + 0.1), chip_px)  # the y range spans 4.1 lanes
    xs, ys, texts, fills, hovers, badges_x, badges_y, badges = [], [], [], [], [], [], [], []
    notes, chips = [], []
    for y, lane in enumerate(LANES):
        ids = members[lane]
        if len(ids) > shown:
            hidden = len(ids) - shown
            ids = ids[-shown:] if lane == "FINISHED" else ids[:shown]
            notes.append(
                dict(
                    x=shown - 0.3,
                    y=y,
                    text=note_text(lane, hidden),
                    showarrow=False,
                    xanchor="left",
                    font=dict(color=c["muted"], size=lane_px),
                )
            )
        for x, rid in enumerate(ids):
            fill = request_color(rid)
            xs.append(x)
            ys.append(y + (rows[0] + rows[1]) / 2)
            texts.append(rid)
            fills.append(fill)
            hovers.append(chip_hover(views.get(rid), rid, modes))
            chips.append(chip(x, y, fill, c["outline"] if changed and rid in changed else None, rows))
            label = badge(views.get(rid), modes)
            if label:
                badges_x.append(x)
                badges_y.append(y + rows[2])
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
            textfont=dict(color=[text_color_on(f) for f in fills], size=chip_px),
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
            textfont=dict(color=c["font"], size=chip_px),
            hoverinfo="skip",
        ),
    ]
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
        text=key_text,
        align="left",
        font=dict(size=key_px, color=c["muted"]),
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
                y0=y + LANE_TOP,
                y1=y + LANE_BOTTOM,
                fillcolor=c["lane"],
                line=dict(width=0),
                layer="below",
            )
            for y in range(len(LANES))
        ]
        + chips,
        margin=dict(l=left, r=4, t=top, b=bottom),
        floor_px=floor_px,
    )
