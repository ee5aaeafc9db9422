"""A row of metrics as one flex box (PAGE_CSS gives each an equal share, as columns would, and wraps the row where a
share would break a label's words): a metric is one element on the wire instead of a column and a metric, which
counts on pages many sessions redraw at once (a class's followers after each step, the Playground's Step under
load)."""

from __future__ import annotations

from typing import Sequence

import streamlit as st

KEY_PREFIX = "metric_row_"  # PAGE_CSS selects the rows by it


def metric_row(metrics: Sequence[tuple[str, str, str]], key: str) -> None:
    """``metrics``: (label, value, help) each, in one row keyed ``metric_row_<key>``."""
    with st.container(horizontal=True, wrap=True, gap="small", key=f"{KEY_PREFIX}{key}"):
        for label, value, help_text in metrics:
            st.metric(label, value, help=help_text)
