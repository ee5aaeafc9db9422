"""The projector's type scale for figures: a figure laid out for a 720p screen, drawn for a 1080p one.

The projector view is one screen for the room. Its text grows with the screen (CSS, ``PRESENTER_CSS``), but a
plotly figure's fonts, margins and height are pixels fixed when it is built, and the server does not know the
screen: at 1920x1080 the grid's numbers and the queue chips stayed at 9-11 px and a third of the screen was empty.
So the projector draws each figure twice, as built and ``projected``, and its CSS shows the one the
screen is tall enough for. Scaling everything that is in pixels together (fonts, marker sizes, line widths,
margins, pixel shifts, the height) keeps the figure's layout exactly: it is the 720p figure, ``PROJECTOR_SCALE``
times larger, in a column that is 1.5x wider.
"""

from __future__ import annotations

import plotly.graph_objects as go

from pykv.viz.spec_figure import SpecFigure

# A 1920x1080 screen against the 1280x720 the projector's figures are built for is 1.5x; a little less, because
# 1080p also shows what 720p folds away (the earlier steps' token diffs): at 1.5 one step of the course scrolled.
PROJECTOR_SCALE = 1.4
# The smallest text a projector's figure is built with (its builder's ``text_px``): the back row reads 14 px at 720p
# and 18 at 1080p, where ``projected`` draws it at 14 x PROJECTOR_SCALE = 19.6 px.
PROJECTOR_TEXT_PX = 14

_FONT_KEYS = frozenset({"font", "textfont", "tickfont", "insidetextfont", "outsidetextfont"})
_PIXEL_KEYS = frozenset({"xshift", "yshift", "standoff", "ticklen", "borderpad", "borderwidth", "minsize"})
_MARGIN_KEYS = frozenset({"l", "r", "t", "b", "pad"})


def _times(value, scale: float):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value * scale
    if isinstance(value, (list, tuple)):
        return [_times(v, scale) for v in value]
    return value


def _scaled(node, scale: float, parent: str = ""):
    """``node`` (a figure's JSON, or part of it) with every pixel quantity times ``scale``."""
    if isinstance(node, list):
        return [_scaled(item, scale, parent) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "size" and (parent in _FONT_KEYS or parent == "marker"):
            out[key] = _times(value, scale)
        elif key == "width" and parent == "line":
            out[key] = _times(value, scale)
        elif key in _MARGIN_KEYS and parent == "margin":
            out[key] = _times(value, scale)
        elif key in _PIXEL_KEYS:
            out[key] = _times(value, scale)
        else:
            out[key] = _scaled(value, scale, key)
    return out


def projected(figure: go.Figure, scale: float = PROJECTOR_SCALE) -> go.Figure:
    """A copy of ``figure`` with its fonts (and the least a bar's text may shrink to), marker sizes, line widths,
    margins, pixel shifts and height times ``scale`` (its template's too: a font the figure leaves to the template
    grows with it). Pure: ``figure`` is left as it was."""
    spec = _scaled(figure.to_plotly_json(), scale)
    layout = spec.setdefault("layout", {})
    if layout.get("height") is not None:
        layout["height"] = round(layout["height"] * scale)
    return SpecFigure(spec)
