"""The project's plotly look: one template per UI theme, and colours that survive colour-blindness.

Every figure builder takes ``dark: bool`` and uses :func:`template` -- never plotly's (or
Streamlit's) default template, which exports near-black PNGs once ``import streamlit`` has run.

Colour rules (checked in tests):

* Requests get a stable colour from ``REQUEST_PALETTE`` by their id (numeric ids by value, others by
  CRC32), so request 3 is the same colour on every step, in every figure and in every session.
* The palette is 16 colours picked from Okabe-Ito's and Paul Tol's published sets (bright, muted, light,
  vibrant, dark) to be far apart for everyone: every pair differs by at least 20 CIELAB units in normal
  vision and 15 under simulated deuteranopia and protanopia (Machado 2009), and each colour is 25+ units from the
  ones of the three ids before it (``tests/viz/test_viz_palette.py`` checks it). The earlier Okabe-Ito + Tol
  "muted" list put req 1 and req 8 (sky blue, cyan) and req 2/9/10 (greens) within 5-14 units. No meaning
  is carried by red-vs-green alone: block *states* differ by
  lightness and by text (free cells are blank, cached cells print ref 0, used cells print ref >= 1).
"""

from __future__ import annotations

import math
import os
import zlib
from functools import lru_cache

import plotly.graph_objects as go

from pykv.viz.spec_figure import SpecFigure

VALIDATE_ENV = "PYKV_VALIDATE_FIGURES"  # "1": figure() validates what it builds (the tests set it)

# 16 colours for 16 concurrent requests (see the module docstring), ordered so that neighbouring ids differ most.
REQUEST_PALETTE = (
    "#AA3377",
    "#F0E442",
    "#99DDFF",
    "#117733",
    "#332288",
    "#D55E00",
    "#77AADD",
    "#EEDD88",
    "#663333",
    "#FFAABB",
    "#0077BB",
    "#E69F00",
    "#222255",
    "#EE6677",
    "#CC79A7",
    "#EE8866",
)

LIGHT = {
    "paper": "#FFFFFF",
    "plot": "#FFFFFF",
    "font": "#1F2330",
    "grid": "#E3E5EA",
    "muted": "#5B6170",
    "free": "#F1F2F5",
    "cached": "#A9AFBC",
    "outline": "#000000",
    "lane": "#F6F7F9",
}
DARK = {
    "paper": "#0E1117",
    "plot": "#0E1117",
    "font": "#E6E8EE",
    "grid": "#2B303B",
    "muted": "#A3A9B7",
    "free": "#222631",
    "cached": "#626A7C",
    "outline": "#FFFFFF",
    "lane": "#161A22",
}


# Text is measured by an estimate (plotly never wraps, and a figure is built before any browser sees it): a character
# of Helvetica/Arial/DejaVu Sans text, mixed case and digits, is about CHAR_EM of the font size wide on average.
CHAR_EM = 0.55


def text_px(chars: int, font_px: float) -> float:
    """The estimated width of ``chars`` characters of text at ``font_px``."""
    return chars * font_px * CHAR_EM


# Axis labels are short and often upper case ("SWAPPED (0)" measured 78 px at 12 px in Chromium: 0.59 em a character),
# so the room kept for them assumes wider characters than running text, and a gap to the plot.
LABEL_EM = 0.62
LABEL_GAP_PX = 6
FONT_PX, TITLE_PX = 12, 14  # the template's text and titles


def tick_label_margin(labels, font_px: float = 12) -> int:
    """The px a y axis's tick labels take beside the plot: the margin to give a figure up front. An axis's
    ``automargin`` only grows a margin too small for its labels, but growing it costs plotly.js a second layout pass
    on every draw, and a Streamlit chart is drawn afresh whenever its figure changes (a Playground Step: 128 ms of
    plotly.js for the four figures with margins left to automargin, 92-102 ms with these)."""
    return math.ceil(max((len(str(label)) for label in labels), default=0) * font_px * LABEL_EM) + LABEL_GAP_PX


def colors(dark: bool = False) -> dict[str, str]:
    return DARK if dark else LIGHT


def request_color(request_id: str) -> str:
    """The stable colour of a request: ids "0", "1", ... walk the palette in order."""
    index = int(request_id) if request_id.isdigit() else zlib.crc32(request_id.encode())
    return REQUEST_PALETTE[index % len(REQUEST_PALETTE)]


def text_color_on(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (WCAG relative luminance)."""
    r, g, b = (int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    luminance = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#000000" if luminance > 0.22 else "#FFFFFF"


@lru_cache(maxsize=2)
def template(dark: bool = False) -> go.layout.Template:
    c = colors(dark)
    axis = dict(
        gridcolor=c["grid"],
        zerolinecolor=c["grid"],
        linecolor=c["grid"],
        tickcolor=c["grid"],
        title=dict(font=dict(color=c["muted"])),
    )
    return go.layout.Template(
        layout=go.Layout(
            paper_bgcolor=c["paper"],
            plot_bgcolor=c["plot"],
            font=dict(family="Inter, 'Source Sans Pro', Helvetica, Arial, sans-serif", size=FONT_PX, color=c["font"]),
            colorway=list(REQUEST_PALETTE),
            xaxis=axis,
            yaxis=axis,
            hoverlabel=dict(bgcolor=c["paper"], font=dict(color=c["font"]), bordercolor=c["muted"]),
            legend=dict(bgcolor="rgba(0,0,0,0)", font=dict(color=c["font"])),
            margin=dict(l=8, r=8, t=36, b=8),
            title=dict(font=dict(size=TITLE_PX, color=c["font"]), x=0, xanchor="left"),
        )
    )


@lru_cache(maxsize=2)
def template_spec(dark: bool = False) -> dict:
    """The template as the dict a figure's JSON carries (shared: never changed)."""
    return template(dark).to_plotly_json()


def title_px(floor_px: float | None) -> float:
    """The title's font size of a figure whose smallest text is ``floor_px`` (None: the template's)."""
    return TITLE_PX if floor_px is None else max(TITLE_PX, floor_px + 2)


def figure(
    title: str,
    height: int,
    dark: bool,
    data: list[dict],
    subtitle: str | None = None,
    floor_px: float | None = None,
    **layout,
) -> go.Figure:
    """A figure from trace and layout dicts, on the project's template: a ``SpecFigure``, which the app serves
    without ever building plotly's objects (``spec_figure``), and which becomes a full ``go.Figure`` where
    anything asks for more. Not validated where the app serves it: plotly's validation was two thirds of a
    Playground Step click's server time (a grid of ~300 shapes: 35 ms against 2 ms). The tests set
    ``PYKV_VALIDATE_FIGURES=1``, so every figure they draw is validated (an unknown property raises).
    Layout keys are plotly's own names, nested as dicts (no ``title_font``-style shorthand: the JSON is sent as
    written). ``floor_px``: the smallest text the figure draws (a projector's floor, which its builder lays out for):
    the figure's own font, its title's and its subtitle's are never smaller (plotly draws a subtitle at 70% of the
    title)."""
    heading: dict = dict(text=title) if subtitle is None else dict(text=title, subtitle=dict(text=subtitle))
    if floor_px is not None:
        heading["font"] = dict(size=title_px(floor_px))
        if subtitle is not None:
            heading["subtitle"]["font"] = dict(size=floor_px)
        layout = dict(font=dict(size=max(FONT_PX, floor_px))) | layout
    layout = dict(template=template_spec(dark), title=heading, height=height) | layout
    if os.environ.get(VALIDATE_ENV) == "1":
        go.Figure(data=data, layout=layout)  # raises on a property plotly does not know
    return SpecFigure.of(data, layout)


def log_axis(title: str, values) -> dict:
    """A log axis whose labels are whole numbers of a 1-2-5 series, or powers of ten across wide ranges: plotly's
    own log ticks print small unlabelled-looking "2" and "5" between the decades (clutter in a design review)."""
    positive = [float(v) for v in values if v is not None and v == v and v > 0]
    axis = dict(type="log", title=dict(text=title))
    if not positive:
        return axis
    low, high = min(positive), max(positive)
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1,) if last - first > 3 else (1, 2, 5)
    ticks = [m * 10.0**e for e in range(first, last + 1) for m in steps if low / 2 <= m * 10.0**e <= high * 2]
    return axis | dict(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
