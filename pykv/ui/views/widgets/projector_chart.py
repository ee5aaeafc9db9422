"""A chart on the projector: drawn for a 720p screen and, ``projected``, for a 1080p one; the projector's CSS
(``PRESENTER_CSS``) shows the one the screen is large enough for, so the grid's numbers, the legends, the queue
chips, the side runs' axes, the token diffs and the room's answers grow with the room's text instead of staying
at 9-11 px."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.projection import projected

SIZES = ("720p", "1080p")  # st-key-…_for720p / _for1080p: what PRESENTER_CSS hides by the screen's size


def chart(figure: go.Figure, key: str) -> None:
    for size, drawn in zip(SIZES, (figure, projected(figure))):
        with st.container(key=f"{key}_for{size}"):
            st.plotly_chart(drawn, theme=None, key=f"{key}_{size}", config=PLOT_CONFIG)
