"""The Your server page's baseline: download this diagnosis as one, upload an earlier one and see what changed: a
different server said first, the verdict (never "same" where a figure is missing), the figures side by side, the
config changes and the findings that went away or appeared."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pykv.bridge import Diagnosis, compare
from pykv.bridge.baseline import baseline_body, baseline_bytes, parse_baseline
from pykv.ui.safe_text import error_line, plain


def render(d: Diagnosis) -> None:
    st.subheader("Baseline")
    st.caption(
        "Keep this diagnosis as a baseline (JSON: the release, the model, the config seen, the figures, the "
        "findings) and compare the next run against it. Nothing is kept on this server after the session."
    )
    st.download_button(
        "Download as a baseline",
        baseline_bytes(baseline_body(d)),
        file_name="pykv-baseline.json",
        mime="application/json",
        key="server_baseline_download",
        icon=":material/download:",
    )
    old = st.file_uploader("Compare with a saved baseline", type=["json"], key="server_baseline_upload")
    if old is None:
        return
    try:
        result = compare(d, parse_baseline(old.getvalue(), "that file"))
    except Exception as e:
        st.error(f"That baseline cannot be used: {error_line(e)}")
        return
    for warning in result.warnings:
        st.warning(plain(warning[0].upper() + warning[1:]) + ".", icon=":material/warning:")
    st.info(plain(result.verdict[0].upper() + result.verdict[1:]) + ".")
    st.dataframe(
        pd.DataFrame(
            [(r.label, r.baseline, r.now, r.change) for r in result.rows],
            columns=["figure", "baseline", "now", "change"],
        ),
        hide_index=True,
        key="server_baseline_table",
    )
    left, right = st.columns(2)
    left.markdown(
        "**Config changes since the baseline**\n\n"
        + ("\n".join(f"- {plain(c)}" for c in result.config_changes) or "none seen")
    )
    lines = [f"- gone: {plain(t)}" for t in result.findings_gone] + [f"- new: {plain(t)}" for t in result.findings_new]
    right.markdown("**Findings since the baseline**\n\n" + ("\n".join(lines) or "the same findings"))
