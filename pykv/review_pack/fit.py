"""A figure fitted to the width a pack draws it at (the page's 700 px, a small multiple's 345 px, an image's
1000 px). The app draws across a wide column, where a long title or subtitle fits on one line and a legend
beside the plot leaves it room; at a pack's width plotly, which never wraps text, runs the same line past
the right edge, and a legend of long names ("swap, modelled H100-SXM + Llama-3.1-8B") squeezes the plot or
is cut off. So, for that width:

- title and subtitle lines are wrapped (a line with markup, e.g. a caption's coloured span, is kept whole:
  its maker wrapped it), the top margin is set to hold them, and no more where nothing else sits above the plot
  (not ``title.automargin``: plotly.js then tops a title of two lines as if it had one, and its first line leaves
  the figure), and the figure grows by the lines added, so the plot keeps its height;
- a legend beside the plot wider than ``LEGEND_SHARE`` of the width goes under it, in rows, and the
  figure grows by those rows;
- a plain-text note under the plot (an annotation at the paper's left edge) is wrapped, and the bottom
  margin grows by its lines.

Text is measured by an estimate, ``pykv.viz.theme.CHAR_EM`` of the font size per character (the block grid's
legend and the export's caption wrap by the same rule); :func:`overflows` says what would still run past the
width, for the tests.
"""

from __future__ import annotations

import html
import math
import re
import textwrap

import plotly.graph_objects as go

from pykv.viz.theme import CHAR_EM

LINE_EM = 1.3  # a line's height in em, as plotly spaces <br> lines
LEGEND_SHARE = 0.25  # a legend beside the plot may take this share of the width; a wider one goes under it
LEGEND_SYMBOL_PX = 40  # a legend entry's symbol and the gap before its text
LEGEND_ROW_PX = 20  # one row of a horizontal legend (font 12)
LEGEND_GAP_PX = 10  # between the x-axis title and a legend under the plot
PAD_PX = 12  # the room a title keeps from the figure's edges (export.PAD_PX)
TITLE_PAD_PX = 8  # above the title
TITLE_GAP_PX = 20  # between the subtitle's last line and the plot
DEFAULT_FONT_PX = 12  # the template's font size
TITLE_FONT_PX = 14  # the template's title size
DEFAULT_HEIGHT = 500  # plotly's, for a figure that sets none

_TAG = re.compile(r"<[^>]+>")
_BR = re.compile(r"<br\s*/?>", re.I)


def plain(text: str) -> str:
    """``text`` as a reader sees it: no tags, entities decoded."""
    return html.unescape(_TAG.sub("", text))


def measure(text: str, font_px: float) -> float:
    """The estimated width of the widest of ``text``'s lines (lines split at <br>)."""
    return max((len(plain(line)) * font_px * CHAR_EM for line in _BR.split(text or "")), default=0.0)


def lines_of(text: str | None) -> list[str]:
    return _BR.split(text) if text else []


def wrap_lines(text: str, font_px: float, width_px: float) -> list[str]:
    """``text``'s lines, each wrapped to ``width_px``; a line with markup is kept whole."""
    chars = max(20, int(width_px / (font_px * CHAR_EM)))
    out = []
    for line in lines_of(text):
        if "<" in line or len(plain(line)) <= chars:
            out.append(line)
        else:
            out += textwrap.wrap(line, chars, break_long_words=False, break_on_hyphens=False)
    return out


def _font_px(font, default: float) -> float:
    return float(font.size) if font is not None and font.size else default


def _title_fonts(fig: go.Figure) -> tuple[float, float]:
    """(title, subtitle) font sizes: the figure's own, else its template's, else the defaults."""
    title, template = fig.layout.title, fig.layout.template.layout.title
    size = _font_px(title.font, _font_px(template.font, TITLE_FONT_PX))
    return size, _font_px(title.subtitle.font, _font_px(template.subtitle.font, DEFAULT_FONT_PX))


def legend_entries(fig: go.Figure) -> list[str]:
    """The names a single legend shows (a trace with ``showlegend`` unset shows when there are two or more)."""
    traces = [t for t in fig.data if getattr(t, "name", None)]
    shown = [t for t in traces if t.showlegend is True or (t.showlegend is None and len(fig.data) > 1)]
    if fig.layout.showlegend is False:
        return []
    return [t.name for t in shown]


def _one_legend(fig: go.Figure) -> bool:
    return all(getattr(t, "legend", None) in (None, "legend") for t in fig.data)


def _legend_beside(fig: go.Figure) -> bool:
    legend = fig.layout.legend
    return legend.orientation != "h" and (legend.x is None or legend.x >= 1)


def _legend_width(fig: go.Figure, names: list[str]) -> float:
    size = _font_px(fig.layout.legend.font, DEFAULT_FONT_PX)
    return max((measure(n, size) for n in names), default=0.0) + LEGEND_SYMBOL_PX


def legend_rows(fig: go.Figure, names: list[str], width_px: float) -> int:
    """Rows a horizontal legend of ``names`` takes across ``width_px``."""
    size = _font_px(fig.layout.legend.font, DEFAULT_FONT_PX)
    rows, used = 1, 0.0
    for n in names:
        w = measure(n, size) + LEGEND_SYMBOL_PX
        if used and used + w > width_px:
            rows, used = rows + 1, 0.0
        used += w
    return rows


def _margin(fig: go.Figure, side: str) -> float:
    m = getattr(fig.layout.margin, side)
    if m is None:
        m = getattr(fig.layout.template.layout.margin, side)
    return float(m) if m is not None else 80.0


def _below_plot(a) -> bool:
    """An annotation at the paper's left edge, hanging under the plot (a key, a note)."""
    return (
        a.xref == "paper"
        and (a.x or 0) == 0
        and a.xanchor == "left"
        and a.yref == "paper"
        and (a.y or 0) <= 0
        and a.yanchor == "top"
    )


def _above_plot(fig: go.Figure) -> bool:
    """Something other than the title sits in the top margin: a note or legend above the plot area, top ticks."""
    for a in fig.layout.annotations:
        if a.yref == "container" or (a.yref == "paper" and ((a.y or 0) > 1 or (a.y == 1 and a.yanchor == "bottom"))):
            return True
    axes = fig.layout.to_plotly_json()
    top_ticks = any(k.startswith("xaxis") and (axes[k] or {}).get("side") == "top" for k in axes)
    return top_ticks or (fig.layout.legend.y is not None and fig.layout.legend.y > 1)


def fit_width(fig: go.Figure, width: int) -> go.Figure:
    """A copy of ``fig`` laid out for ``width`` px (see the module docstring); ``fig`` is not changed."""
    out = go.Figure(fig)
    height = float(fig.layout.height or DEFAULT_HEIGHT)
    grow_top = grow_bottom = 0.0
    title_px, subtitle_px = _title_fonts(out)
    room = width - 2 * PAD_PX
    title = out.layout.title
    new_title = wrap_lines(title.text or "", title_px, room)
    new_subtitle = wrap_lines(title.subtitle.text or "", subtitle_px, room)
    added = (len(new_title) - len(lines_of(title.text)), len(new_subtitle) - len(lines_of(title.subtitle.text)))
    margin_t = _margin(out, "t")
    if title.text or title.subtitle.text:
        grow_top = added[0] * title_px * LINE_EM + added[1] * subtitle_px * LINE_EM
        # plotly.js tops a title of n lines as if it had one (the others go up, off the figure): pad it down;
        # the top margin is set here (automargin would move the title again, off the figure)
        extra_lines = max(0, len(new_title) - 1) * title_px * LINE_EM
        out.update_layout(
            title=dict(
                text="<br>".join(new_title),
                yref="container",
                y=1,
                yanchor="top",
                pad=dict(t=TITLE_PAD_PX + extra_lines, l=PAD_PX),
                automargin=False,
                subtitle=dict(text="<br>".join(new_subtitle) or None),
            )
        )
        needed = (
            TITLE_PAD_PX
            + len(new_title) * title_px * LINE_EM
            + len(new_subtitle) * subtitle_px * LINE_EM
            + TITLE_GAP_PX
        )
        # nothing but the title above the plot: the margin is what the title needs (the crossover's 96 px, kept,
        # left an empty band under a two-line subtitle)
        margin_t = max(margin_t + grow_top, needed) if _above_plot(out) else needed
        grow_top = margin_t - _margin(fig, "t")
    plot_px = width - _margin(out, "l") - _margin(out, "r")
    names = legend_entries(out)
    if names and _one_legend(out) and _legend_beside(out) and _legend_width(out, names) > LEGEND_SHARE * width:
        rows = legend_rows(out, names, width - 2 * PAD_PX)
        grow_bottom += rows * LEGEND_ROW_PX + LEGEND_GAP_PX
        out.update_layout(
            legend=dict(
                orientation="h",
                x=PAD_PX / width,
                xanchor="left",
                xref="container",
                y=0,
                yanchor="bottom",
                yref="container",
            )
        )
        plot_px = width - _margin(out, "l") - PAD_PX  # the legend's room on the right is the plot's now
    notes = list(out.layout.annotations)
    for i, a in enumerate(notes):
        if a.text and "<" not in a.text and _below_plot(a):
            size = _font_px(a.font, DEFAULT_FONT_PX)
            wrapped = wrap_lines(a.text, size, plot_px)
            if len(wrapped) > 1:
                notes[i] = go.layout.Annotation(a, text="<br>".join(wrapped))
                grow_bottom += (len(wrapped) - 1) * size * LINE_EM
    margin_b = _margin(out, "b") + grow_bottom
    out.update_layout(
        annotations=notes,
        height=math.ceil(height + grow_top + grow_bottom),
        margin=dict(t=math.ceil(margin_t), b=math.ceil(margin_b)),
    )
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_subtitle(fig: go.Figure, width: int, font_px: float, max_lines: int = 2) -> tuple[go.Figure, str]:
    """(a copy of ``fig`` whose subtitle is drawn at ``font_px`` in at most ``max_lines`` lines at ``width`` px, the
    sentences of it that did not fit, as plain text). Whole sentences are kept from the start; a subtitle with markup
    is kept whole (its maker laid it out). A page puts the rest in the figure's caption, where it wraps as text does:
    the app's subtitles, drawn at plotly's 0.7 em at a page's width, were ~10 px and three or four lines."""
    text = fig.layout.title.subtitle.text or ""
    out = go.Figure(fig)
    if not text:
        return out, ""
    room = width - 2 * PAD_PX
    kept: list[str] = []
    rest: list[str] = []
    if _TAG.sub("", _BR.sub(" ", text)) != _BR.sub(" ", text):
        kept = [text]
    else:
        for sentence in _SENTENCE_END.split(html.unescape(_BR.sub(" ", text))):
            fits = not rest and len(wrap_lines(" ".join(kept + [sentence]), font_px, room)) <= max_lines
            (kept if fits else rest).append(sentence)
        kept = [html.escape(" ".join(kept), quote=False)] if kept else []
    out.update_layout(title=dict(subtitle=dict(text=kept[0] if kept else None, font=dict(size=font_px))))
    return out, " ".join(rest)


def overflows(fig: go.Figure, width: int) -> list[str]:
    """What would still run past ``width`` px (estimated): title and subtitle lines, a legend beside the plot
    wider than its share, a plain note under the plot wider than the plot. Empty when everything fits."""
    out = []
    title_px, subtitle_px = _title_fonts(fig)
    room = width - 2 * PAD_PX
    for line in lines_of(fig.layout.title.text):
        if measure(line, title_px) > room:
            out.append(f"title line {plain(line)!r}")
    for line in lines_of(fig.layout.title.subtitle.text):
        if measure(line, subtitle_px) > room:
            out.append(f"subtitle line {plain(line)!r}")
    names = legend_entries(fig)
    if names and _one_legend(fig) and _legend_beside(fig) and _legend_width(fig, names) > LEGEND_SHARE * width:
        out.append(f"a legend beside the plot {_legend_width(fig, names):.0f} px wide")
    plot_px = width - _margin(fig, "l") - _margin(fig, "r")
    for a in fig.layout.annotations:
        if a.text and _below_plot(a) and measure(a.text, _font_px(a.font, DEFAULT_FONT_PX)) > plot_px:
            out.append(f"note {plain(a.text)[:40]!r}")
    return out
