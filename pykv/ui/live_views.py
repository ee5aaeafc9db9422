"""The live views of a Lab at its cursor: metrics strip, block grid(s), queues, "This step" narration
and the detail tabs. The Playground and the lesson player both draw them, so a lesson shows exactly
what the playground shows.

Every figure comes from ``pykv.viz``, drawn with ``theme=None`` and a stable key. ``key_prefix`` keeps
two pages' element keys apart (the Playground uses none, so its keys stay "grid_gpu", "queues", ...).
"""

from __future__ import annotations

import streamlit as st

from pykv.lab import Lab
from pykv.snapshot import diff_snapshots
from pykv.ui import state
from pykv.viz import (
    block_grid_figure,
    block_tables_figure,
    metrics_strip,
    narrate,
    preemptions_frame,
    queues_figure,
    requests_frame,
)

PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def render(lab: Lab, key_prefix: str = "", split: tuple[int, int] = (5, 4), grid_height: int = 460) -> None:
    """Everything below the controls: metrics, grids | queues + narration, then the detail tabs."""
    snap, prev = lab.view, lab.previous
    diff = diff_snapshots(prev, snap) if prev is not None else None
    dark = state.is_dark()
    k = key_prefix

    for col, (label, value, help_text) in zip(st.columns(6), metrics_strip(snap)):
        col.metric(label, value, help=help_text)

    cpu_blocks = sum(b.pool == "cpu" for b in snap.blocks)
    left, right = st.columns(list(split), gap="medium")
    with left:
        if cpu_blocks:
            g1, g2 = st.columns([5, 2], gap="small")
        else:
            g1, g2 = st.container(), None
        g1.plotly_chart(block_grid_figure(snap, "gpu", diff.blocks if diff else None, dark=dark, height=grid_height),
                        theme=None, key=f"{k}grid_gpu", config=PLOT_CONFIG)
        if g2 is not None:
            g2.plotly_chart(block_grid_figure(snap, "cpu", diff.blocks if diff else None, dark=dark, height=grid_height,
                                              legend=False, cols=4 if cpu_blocks <= 64 else 8),
                            theme=None, key=f"{k}grid_cpu", config=PLOT_CONFIG)
    with right:
        st.plotly_chart(queues_figure(snap, dark=dark, changed=diff.requests if diff else None, height=235),
                        theme=None, key=f"{k}queues", config=PLOT_CONFIG)
        st.markdown("**This step**")
        with st.container(height=215, key=f"{k}narration"):
            st.markdown("\n".join(f"- {line}" for line in narrate(snap)))
            if log_lines := (snap.report.log_lines if snap.report else None):
                st.code("\n".join(log_lines), language=None, wrap_lines=True)
    details(lab, snap, diff, dark, key_prefix)


def details(lab: Lab, snap, diff, dark: bool, key_prefix: str = "") -> None:
    k = key_prefix
    tables, reqs, costs, logs = st.tabs(["Block tables", "Requests", "Preemption costs", "Log (all steps)"])
    with tables:
        st.plotly_chart(block_tables_figure(snap, dark=dark, changed_requests=diff.requests if diff else None),
                        theme=None, key=f"{k}block_tables", config=PLOT_CONFIG)
    with reqs:
        st.dataframe(requests_frame(snap), hide_index=True, key=f"{k}requests_table", width="stretch")
    with costs:
        frame = preemptions_frame(snap)
        if frame.empty:
            st.caption("No preemption yet.")
        else:
            st.caption(f"Measured on {snap.device}; swap rows also show a modelled PCIe time (modelled, not measured). "
                       "recompute_s is the forward time apportioned to re-prefilled tokens.")
            st.dataframe(frame, hide_index=True, key=f"{k}preemptions_table", width="stretch")
    with logs:
        lines = [f"[step {s.step}] {line}" for s in lab.snapshots[1:lab.cursor + 1]
                 for line in (s.report.log_lines if s.report else [])]
        st.code("\n".join(lines[-300:]) if lines else "(no log lines yet)", language=None, wrap_lines=True)
