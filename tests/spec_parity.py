"""The check that a SpecFigure serves what a go.Figure of the same dicts serves (pykv.viz.spec_figure): the suite
installs it for every figure it draws (conftest), and tests/viz/test_spec_figure.py counts it on real runs."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio

from pykv.viz.spec_figure import SpecFigure


def as_json(fig) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def without_nulls(value):
    """JSON with every null property left out: plotly.js reads a null as unset (a null inside a list stays)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return [without_nulls(v) for v in value] if isinstance(value, list) else value


class ParityCheckedSpecFigure(SpecFigure):
    """A SpecFigure that, as it is made, compares its JSON with the unvalidated go.Figure's (what the app served
    before SpecFigure), and counts the figures it checked."""

    checked = 0

    @classmethod
    def of(cls, data, layout):
        made = super().of(data, layout)
        before = go.Figure(data=data, layout=layout, _validate=False)
        if without_nulls(as_json(made)) != without_nulls(as_json(before)):
            raise AssertionError(f"a SpecFigure's JSON is not go.Figure's: {layout.get('title')}")
        ParityCheckedSpecFigure.checked += 1
        return made
