"""A figure drawn once and served to many pages: a class's followers all rerun when the instructor moves.

``st.plotly_chart`` turns a figure into a dict (``Figure.to_dict``, a deep copy) and that dict into JSON (numpy
arrays base64-encoded) on every page run. For a figure that never changes again, ``served`` does both once: its
``to_dict`` hands out the JSON-ready dict made at the start (the per-run ``to_dict`` was 6% of a class server's
time under 200 followers, py-spy). The dict is shared: nothing may change it, nor the figure.
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio


class ServedFigure(go.Figure):
    """A frozen figure whose dict is computed once (see the module docstring)."""

    def __init__(self, figure: go.Figure) -> None:
        super().__init__(figure, _validate=False)
        self._served = json.loads(pio.to_json(figure, validate=False))

    def to_dict(self) -> dict:
        return self._served


def served(figure: go.Figure) -> ServedFigure:
    return figure if isinstance(figure, ServedFigure) else ServedFigure(figure)
