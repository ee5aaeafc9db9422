"""The light views of a lesson step (a class follower's page, the projector): the metrics strip, the
device pool, the queues and the step's narration — the Playground's live views without the timeline,
the tables and the exports.

They are light on purpose: every follower's page reruns each time the instructor moves, so each figure
is drawn once per class step and theme (``SharedLesson.derived``) and only serialised per session; the
projector needs one screen. A learner who wants the rest presses "Explore on my own" and gets the full
Playground.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from pykv.border.snapshot import diff_snapshots
from pykv.lab.lab import Lab
from pykv.lessons.run.shared import SharedLesson
from pykv.ui.session import state
from pykv.ui.views.widgets import projector_chart
from pykv.ui.views.widgets.metric_row import metric_row
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz import block_grid_figure, metrics_strip, narrate, queues_figure
from pykv.viz.projection import PROJECTOR_TEXT_PX

# The projector's grid and queue columns at 1280x720, in px, rounded down (1080p draws them larger, projector_chart)
PROJECTOR_WIDTHS = (340, 270)
# A learner's at 1280 px, the narrowest laptop the page is laid out for: wider screens get the same lines, never cut
LEARNER_WIDTHS = (290, 230)
# The projector's grid at 720p when nothing is drawn under it: it takes the room a side-runs chart would have (the
# lower third of a 1080p screen stayed empty)
PROJECTOR_GRID_ALONE_PX = 400


def render(
    lab: Lab,
    shared: SharedLesson | None = None,
    grid_height: int = 380,
    key: str = "follow",
    metrics_per_row: int | None = None,
    below_grid: Callable[[], None] | None = None,
    aside: Callable[[], None] | None = None,
    projector: bool = False,
) -> None:
    """``lab`` at its cursor (never stepped here). ``shared``: the class's lesson, whose memo draws each
    figure once for every follower (None: drawn for this page only, e.g. the solo projector view).
    ``aside``: drawn under the queues in place of the step log (the projector's takeaway at a lesson's end).
    ``projector``: one screen for a room, which cannot scroll a box: the step log as tall as its lines (the fit walks
    check that the page still fits), each chart at both projector sizes (``projector_chart``)."""
    snap, prev = lab.view, lab.previous
    dark = state.is_dark()
    if projector and below_grid is None:
        grid_height = max(grid_height, PROJECTOR_GRID_ALONE_PX)

    def figures():
        diff = diff_snapshots(prev, snap) if prev is not None else None
        widths = PROJECTOR_WIDTHS if projector else LEARNER_WIDTHS  # the legends wrap to them, the chips fit them
        floor = PROJECTOR_TEXT_PX if projector else None  # the back row's type
        # SpecFigures: a class's followers, handed the same ones by the memo, serve the dicts made for the first
        grid = block_grid_figure(
            snap, "gpu", diff.blocks if diff else None, height=grid_height, dark=dark, width=widths[0], floor_px=floor
        )
        queues = queues_figure(
            snap, changed=diff.requests if diff else None, height=235, dark=dark, width=widths[1], floor_px=floor
        )
        # the projector's step log is as tall as its lines and must fit one screen: why the waiting queue waits is
        # told on the learners' screens and in the Playground
        return grid, queues, metrics_strip(snap), narrate(snap, waits=not projector)

    memo = (id(lab), snap.step, dark, grid_height, projector, "follower")
    grid, queues, strip, lines = shared.derived(memo, figures) if shared is not None else figures()
    per_row = len(strip) if metrics_per_row is None else metrics_per_row
    for row in range(0, len(strip), per_row):
        metric_row(strip[row : row + per_row], f"{key}_{row}")
    left, right = st.columns([5, 4], gap="medium")
    draw = (
        projector_chart.chart
        if projector
        else (lambda figure, chart_key: st.plotly_chart(figure, theme=None, key=chart_key, config=PLOT_CONFIG))
    )
    with left:
        draw(grid, f"{key}_grid")
        if below_grid is not None:  # e.g. the projector's side-runs chart, in the room the grid leaves
            below_grid()
    with right:
        draw(queues, f"{key}_queues")
        if aside is not None:
            aside()
            return
        st.markdown("**This step**")
        # on the projector no frame: a learner's scrolls, the room's is as tall as its lines (and 720p has no 34 px)
        with st.container(height="content" if projector else 215, border=not projector, key=f"{key}_narration"):
            st.markdown("\n".join(f"- {line}" for line in lines))
