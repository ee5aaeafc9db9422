"""A figure kept as the JSON-ready dict it was built from, until something asks it for more.

``st.plotly_chart`` wants only a figure's dict: it calls ``to_dict()`` and writes that out as JSON. A ``go.Figure``
costs twice on the way, even unvalidated: its constructor turns every trace and layout dict into property objects
(deep-copying them), and ``to_dict`` deep-copies them back out. On a Playground Step that was about a sixth of
the script's time (py-spy), for four figures that are drawn once and thrown away.

A ``SpecFigure`` keeps the dict. ``to_dict`` hands it out (numpy arrays base64-encoded, as plotly sends them; top
level copied, what is inside shared and not to be changed). Anything else (``fig.layout``, ``update_layout``, an
export, ``==``) first turns it into the full ``go.Figure`` of the same dict, once: every attribute a full figure has
and this one lacks goes through ``__getattr__``, which builds it.

``spec`` leaves out properties set to None (plotly.js reads a null as unset; a ``go.Figure`` drops some and sends
others as null), so the figure drawn is the same either way: the test suite compares the two JSONs for every figure
it draws (``tests/spec_parity.py``).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from _plotly_utils.utils import convert_to_base64


def spec(value: Any) -> Any:
    """``value`` with every dict entry that is None left out, at any depth (a None inside a list stays: a heatmap's
    empty cell)."""
    if isinstance(value, dict):
        return {k: spec(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)) and any(isinstance(v, (dict, list, tuple)) for v in value):
        return [spec(v) for v in value]
    return value


class SpecFigure(go.Figure):
    """A ``go.Figure`` that is its spec until first used as more (see the module docstring)."""

    def __init__(self, figure_spec: dict) -> None:
        self.__dict__["_spec"] = figure_spec  # not through BaseFigure.__setattr__, which wants a built figure

    @classmethod
    def of(cls, data: list[dict], layout: dict) -> "SpecFigure":
        """The figure of these traces and this layout (dicts as ``go.Figure`` takes them)."""
        return cls(dict(data=[spec(trace) for trace in data], layout=spec(layout)))

    def __getattr__(self, name: str) -> Any:
        # Reached only for what this object lacks: the state of a built figure (or a name nothing has).
        figure_spec = self.__dict__.pop("_spec", None)
        if figure_spec is None:
            raise AttributeError(name)
        self.__dict__.pop("_served", None)
        go.Figure.__init__(self, figure_spec, _validate=False)
        return getattr(self, name)

    def to_dict(self) -> dict:
        """The dict ``go.Figure.to_dict`` would give: numpy arrays base64-encoded (made once, on the first call)."""
        if "_spec" not in self.__dict__:
            return super().to_dict()
        served = self.__dict__.get("_served")
        if served is None:
            served = self.__dict__["_served"] = spec(self.__dict__["_spec"])  # new dicts: the spec keeps its arrays
            convert_to_base64(served)
        return dict(served)
