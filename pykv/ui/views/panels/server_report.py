"""The diagnosis of a real server on screen: the release and what it can show, start-up facts, the timeline and
the findings with their evidence and fixes (``pykv.bridge``'s result; ``pykv.viz.server_timeline`` draws it)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pykv.bridge import Diagnosis
from pykv.bridge.logs.engines import engine_lines
from pykv.ui.safe_text import plain
from pykv.ui.session import state
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.server_timeline import server_timeline_figure

CONFIDENCE_ICON = {"high": ":material/error:", "medium": ":material/warning:", "low": ":material/info:"}


def release(d: Diagnosis) -> None:
    st.subheader(f"Release: {plain(d.release.text)}")
    st.caption(" · ".join(plain(note) for note in d.visibility))
    cols = st.columns(4)
    cols[0].metric(
        "Preemptions (at least)",
        f"{d.preemptions_at_least:,}" if d.preemptions_counted else d.preemption_state,
        help="A floor, counted in what was read: V0 prints its warning once per 50 preemptions (the count is read "
        "from total_num_cumulative_preemption); a counter read once counts since the server started (the line "
        "below says which). V1 logs none, and "
        "its stats line's count is never printed: give the server's /metrics (vllm:num_preemptions_total). vLLM "
        "before 0.4.3 has neither the warning nor the counter.",
    )
    cols[1].metric("Samples", f"{len(d.samples):,}")
    cols[2].metric("Lines read", f"{d.lines_read:,}")
    cols[3].metric("Lines skipped", f"{d.lines_skipped:,}", help="Lines the bridge does not know: counted, skipped.")
    if d.preemption_text:
        st.caption(f"Preemptions: {plain(d.preemption_text)}")
    for note in d.notes:
        st.caption(plain(note))


NOT_IN_LOG = "—"  # a start-up fact this log does not print


def startup(d: Diagnosis) -> None:
    if not d.startup:
        st.caption(
            "No start-up lines (# GPU blocks, KV cache size, maximum concurrency): the replay sizes the "
            "pressure from KV usage alone."
        )
        return
    rows = [
        {key: _fact_cell(value) for key, value in f.to_json_dict().items()}
        | {"start-up failed": "yes" if f.startup_error else "no"}
        for f in d.startup
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="server_startup")
    if any(cell == NOT_IN_LOG for row in rows for cell in row.values()):
        st.caption(f"{NOT_IN_LOG}: not in the start-up lines read (not every release prints every fact).")


def _fact_cell(value: int | float | None) -> str:
    """A start-up fact as a person reads it (2,048; 21.97); a fact the log does not print is a dash,
    not "None"."""
    if value is None:
        return NOT_IN_LOG
    return f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"


def timeline(d: Diagnosis) -> None:
    if not d.samples:
        st.caption("No periodic stats lines or scrapes: nothing to chart over time.")
        return
    fig = server_timeline_figure(d.samples, d.startup, dark=state.is_dark())
    st.plotly_chart(fig, theme=None, key="server_timeline", config=PLOT_CONFIG)
    if d.engine_samples:  # a data-parallel server: the chart is the total, each engine in words
        st.text("\n".join(engine_lines(d.engine_samples)))


def findings(d: Diagnosis) -> None:
    st.subheader("Findings")
    if not d.findings:
        unseen = "" if d.preemptions_counted else f" (preemptions: {d.preemption_state})"
        st.success(f"Nothing here looks like KV-cache trouble{unseen}.")
        return
    for f in d.findings:
        with st.expander(
            f"{plain(f.title)} ({f.confidence} confidence)",
            icon=CONFIDENCE_ICON.get(f.confidence),
            expanded=f.confidence == "high",
        ):
            st.markdown(f"**Why {f.confidence}:** {plain(f.why)}")
            st.markdown("**Evidence**")
            st.text("\n".join(f.evidence[:12]) + (f"\n… {len(f.evidence) - 12} more" if len(f.evidence) > 12 else ""))
            st.markdown(f"**Fix, in the tuning order of vLLM's optimization guide:** {plain(f.fix)}")
            st.caption(f"id `{f.id}`")
