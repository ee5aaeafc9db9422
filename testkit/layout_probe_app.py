"""app.py as the projector-fit walks serve it (`streamlit run testkit/layout_probe_app.py`): every plotly chart is
drawn as an empty box of its figure's height, so Chromium lays each step out without drawing a chart, which was
most of the browser's time on a step (the fit walks were a quarter of CI). Nothing else differs: the same pages,
widgets, keys, text and CSS. tests/e2e/test_layout_probe.py checks that a probed page is as tall as the real one,
column by column, at both projector sizes, for steps that show every chart the projector draws."""

from __future__ import annotations

import html
import re
import runpy
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

APP = Path(__file__).resolve().parent.parent / "app.py"


def _height(figure) -> int:
    height = figure.layout.height if hasattr(figure, "layout") else (figure.get("layout") or {}).get("height")
    if height is None:  # Streamlit would pick a height of its own: the probe cannot stand in for it
        raise ValueError("the layout probe needs every chart's figure to set layout.height")
    return int(height)


def _caption(figure) -> str:
    """The chart's title and subtitle as plain text: a walk waits on what a chart says (the class tally's "right
    answer" is its subtitle), so the box says it too."""
    title = (figure if hasattr(figure, "layout") else go.Figure(figure)).layout.title
    return " · ".join(re.sub(r"<[^>]+>", " ", text) for text in (title.text, title.subtitle.text) if text)


def _chart_box(dg: DeltaGenerator, figure_or_data, *_args, **_kwargs):
    """An element exactly as tall as the chart would be (plotly's element is its figure's height), its text clipped
    inside so it cannot change the height."""
    return dg.html(
        f'<div data-probe="chart" style="height:{_height(figure_or_data)}px;overflow:hidden">'
        f"{html.escape(_caption(figure_or_data))}</div>"
    )


if __name__ != "__main__":  # imported by the server, as app.py is: the ASGI app with the app's own routes
    from pykv.ui.session.follow_push import routes

    app = st.App(__file__, routes=routes())
else:
    DeltaGenerator.plotly_chart = _chart_box  # type: ignore[method-assign]  # col.plotly_chart, container.plotly_chart
    st.plotly_chart = lambda *args, **kwargs: _chart_box(st._main, *args, **kwargs)  # bound at import
    runpy.run_path(str(APP), run_name="__main__")
