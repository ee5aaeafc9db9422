"""The Sweep page (being built: issue 6)."""

from __future__ import annotations

import streamlit as st


def render() -> None:
    st.title("Sweep")
    st.info("Sweeps (pool size × preemption mode, with the measured cost of each run) arrive in a later version. "
            "Until then the command line has them: `python -m pykv sweep --help`.")
