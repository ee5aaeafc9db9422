"""The Lessons page (being built: issue 7)."""

from __future__ import annotations

import streamlit as st


def render() -> None:
    st.title("Lessons")
    st.info("Guided lessons for workshops arrive in a later version. The Playground already runs every preset.")
