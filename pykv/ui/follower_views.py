"""The views a class follower sees: the metrics strip, the device pool, the queues and the step's
narration — the Playground's live views without the timeline, the tables and the exports.

They are light on purpose: every follower's page reruns each time the instructor moves, so each figure
is drawn once per class step and theme (``SharedLesson.derived``) and only serialised per session. A
learner who wants the rest presses "Explore on my own" and gets the full Playground.
"""

from __future__ import annotations

import streamlit as st

from pykv.lab import Lab
from pykv.lessons.shared import SharedLesson
from pykv.snapshot import diff_snapshots
from pykv.ui import state
from pykv.ui.live_views import PLOT_CONFIG
from pykv.viz import block_grid_figure, metrics_strip, narrate, queues_figure


def render(shared: SharedLesson, index: int, lab: Lab) -> None:
    """``lab`` (a shared step's Lab, never stepped here) at ``index``: the step the class is on."""
    snap, prev = lab.view, lab.previous
    dark = state.is_dark()

    def figures():
        diff = diff_snapshots(prev, snap) if prev is not None else None
        return (block_grid_figure(snap, "gpu", diff.blocks if diff else None, height=380, dark=dark),
                queues_figure(snap, changed=diff.requests if diff else None, height=235, dark=dark),
                metrics_strip(snap), narrate(snap))

    grid, queues, strip, lines = shared.derived((id(lab), snap.step, dark, "follower"), figures)
    for col, (label, value, help_text) in zip(st.columns(len(strip)), strip):
        col.metric(label, value, help=help_text)
    left, right = st.columns([5, 4], gap="medium")
    with left:
        st.plotly_chart(grid, theme=None, key="follow_grid", config=PLOT_CONFIG)
    with right:
        st.plotly_chart(queues, theme=None, key="follow_queues", config=PLOT_CONFIG)
        st.markdown("**This step**")
        with st.container(height=215, key="follow_narration"):
            st.markdown("\n".join(f"- {line}" for line in lines))
