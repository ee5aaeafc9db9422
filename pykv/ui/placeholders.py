"""Pages that later versions fill."""

from __future__ import annotations

import streamlit as st


def sweep() -> None:
    st.title("Sweep")
    st.info("Sweeps (pool size × preemption mode, with the measured cost of each run) arrive in a later version. "
            "Until then the command line has them: `python -m pykv sweep --help`.")


def lessons() -> None:
    st.title("Lessons")
    st.info("Guided lessons for workshops arrive in a later version. The Playground already runs every preset.")
