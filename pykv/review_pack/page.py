"""A review pack as data (sections of HTML fragments and figures) and as one self-contained HTML page:
plotly.js embedded once, each figure a div, no network request of any kind (no CDN, no web font, no
MathJax, no image), and print CSS that starts each section on a new page and never splits a figure.

Every string that reaches the page goes through :func:`esc` (or a helper that calls it): run text,
request ids and lesson narration are data, never markup.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

import plotly.graph_objects as go

from pykv.review_pack.deep_link import absolute
from pykv.review_pack.fit import fit_width, split_subtitle

PAGE_WIDTH_PX = 700  # the content width: A4 less 12 mm margins is 703 px at 96 dpi
HALF_WIDTH_PX = 345
SUBTITLE_PX = 12  # a chart's subtitle on the page (plotly's own 0.7 em of a 14 px title is ~10 px)
PLOT_CONFIG = {"displaylogo": False, "responsive": False}


@dataclass(frozen=True)
class PackFigure:
    """A figure of the pack: ``name`` is its file stem in the zip and its div id (unique in the pack)."""

    name: str
    caption: str
    figure: go.Figure
    half: bool = False  # half the page width (small multiples)
    step: int | None = None  # the step drawn, where it is not the run's last (its exported link opens that step)
    linked: bool = True  # False: the figure does not depend on the run, so its exported image carries no run link


@dataclass(frozen=True)
class Figures:
    """Figures side by side, wrapping (small multiples)."""

    items: tuple[PackFigure, ...]


Block = str | PackFigure | Figures  # str: an HTML fragment built by this module's helpers


@dataclass(frozen=True)
class Section:
    id: str  # the anchor (letters, digits and dashes)
    title: str
    blocks: tuple[Block, ...]

    def figures(self) -> list[PackFigure]:
        out = []
        for b in self.blocks:
            out += [b] if isinstance(b, PackFigure) else list(b.items) if isinstance(b, Figures) else []
        return out


@dataclass(frozen=True)
class ReviewPack:
    """What a pack holds: the page's sections, and the files the zip adds beside the HTML."""

    title: str
    subtitle: str
    sections: tuple[Section, ...]
    summary: str = ""  # an HTML fragment for the first page, under the title
    link: str | None = None  # a link into the app that reproduces the run (absolute where the lab's address was known)
    csvs: dict[str, str] = field(default_factory=dict)  # file name -> CSV text
    files: dict[str, str] = field(default_factory=dict)  # other text files (the final snapshot's JSON)

    def figures(self) -> list[PackFigure]:
        return [f for s in self.sections for f in s.figures()]


# ---- fragments ---------------------------------------------------------------------------------


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def para(text: str, cls: str = "") -> str:
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<p{attr}>{esc(text)}</p>"


def link_html(link: str) -> str:
    """A link, clickable where it is absolute (``https://...``), plain text where it is relative."""
    return f'<a href="{esc(link)}">{esc(link)}</a>' if absolute(link) else esc(link)


def link_block(link: str) -> str:
    """:func:`link_html` in a code block."""
    return f'<pre class="link">{link_html(link)}</pre>'


def code_block(text: str, cls: str = "") -> str:
    return f'<pre class="{esc(cls)}">{esc(text)}</pre>' if cls else f"<pre>{esc(text)}</pre>"


class Code(str):
    """A table cell shown as code (a command-line flag)."""


class Num(str):
    """A table cell that is a number already written for people (``units.fmt_fixed``): right-aligned as numbers are."""


def cell_text(value: object) -> str:
    """A table cell: None and NaN as a dash, floats to 3 significant digits, everything else as str."""
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, float):
        return plain_number(value)
    return str(value)


def plain_number(value: float) -> str:
    """3 significant digits, never in scientific notation: 122,000 / 12.3 / 0.00157."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def _number(v: object) -> bool:
    return isinstance(v, Num) or (isinstance(v, (int, float)) and not isinstance(v, bool))


def table(
    columns: Sequence[str], rows: Iterable[Sequence[object]], cls: str = "", widths: Sequence[str] | None = None
) -> str:
    """A plain table; numbers right-aligned, and the dash of a number not known in a column of numbers too; a header
    may break after an underscore. ``widths`` (CSS widths, one per column) fixes the layout, so no cell can push the
    table past the page."""
    head = "".join(f"<th>{esc(c).replace('_', '_<wbr>')}</th>" for c in columns)
    rows = [tuple(r) for r in rows]
    numbers = [any(map(_number, c)) and all(_number(v) or cell_text(v) == "—" for v in c) for c in zip(*rows)]
    body = []
    for row in rows:
        cells = "".join(
            f"<td><code>{esc(v)}</code></td>"
            if isinstance(v, Code)
            else f'<td class="num">{esc(cell_text(v))}</td>'
            if _number(v) or numbers[i]
            else f"<td>{esc(cell_text(v))}</td>"
            for i, v in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    attr = f' class="{esc(cls)}"' if cls else ""
    cols = ""
    if widths:
        attr += ' style="table-layout: fixed"'
        cols = "<colgroup>" + "".join(f'<col style="width: {esc(w)}">' for w in widths) + "</colgroup>"
    return f"<table{attr}>{cols}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def even(columns: Sequence) -> list[str]:
    """Equal column widths for :func:`table` (a wide table of numbers that must keep to the page)."""
    return [f"{100 / len(columns):.3f}%"] * len(columns)


BOLD_EM = 1.15  # a bold header character is this much wider than a cell's


def fitted(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Column widths for :func:`table` in proportion to what each column holds: its header's longest word (a header
    breaks between words, never inside one) or its widest cell, whichever is wider."""
    need = []
    for i, c in enumerate(columns):
        word = max((len(w) for w in str(c).split()), default=1) * BOLD_EM
        need.append(max([word] + [len(cell_text(r[i])) for r in rows]))
    total = sum(need) or 1
    return [f"{100 * n / total:.3f}%" for n in need]


def frame_table(frame, cls: str = "", widths: Sequence[str] | None = None) -> str:
    """A pandas DataFrame as :func:`table` (values as Python objects: NaN shows as a dash)."""
    rows = frame.astype(object).itertuples(index=False, name=None)
    return table([str(c) for c in frame.columns], rows, cls, widths)


def definition_list(items: Iterable[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"


# ---- the page ----------------------------------------------------------------------------------

CSS = f"""
:root {{ color-scheme: light; }}
body {{ margin: 0; background: #FFFFFF; color: #1F2330;
  font: 13px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }}
main {{ width: {PAGE_WIDTH_PX}px; margin: 24px auto 48px; }}
h1 {{ font-size: 22px; margin: 0 0 4px; }}
h2 {{ font-size: 17px; margin: 0 0 8px; padding-bottom: 4px; border-bottom: 1px solid #E3E5EA; }}
h3 {{ font-size: 14px; margin: 14px 0 6px; }}
section {{ margin-top: 36px; }}
p {{ margin: 6px 0; }}
.muted {{ color: #5B6170; }}
table {{ border-collapse: collapse; width: 100%; font-size: 11px; margin: 6px 0 10px; }}
th, td {{ border-bottom: 1px solid #E3E5EA; padding: 2px 5px; text-align: left; vertical-align: top;
  overflow-wrap: break-word; }}
td code {{ font-size: 10px; }}
table[style] td {{ overflow-wrap: anywhere; }}
th {{ background: #F6F7F9; font-weight: 600; overflow-wrap: normal; word-break: keep-all; }}  /* never "preempti ons" */
td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
table.wide {{ font-size: 10px; }}
table.wide th, table.wide td {{ padding: 2px 3px; }}
thead {{ display: table-header-group; }}
tr {{ break-inside: avoid; page-break-inside: avoid; }}
pre {{ background: #F6F7F9; padding: 8px; font: 10.5px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas,
  monospace; white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0 10px; }}
code {{ font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.95em; }}
dl {{ display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }}
dt {{ color: #5B6170; }} dd {{ margin: 0; }}
nav ol {{ margin: 6px 0; padding-left: 20px; }}
a {{ color: #0072B2; }}
figure {{ margin: 8px 0 12px; break-inside: avoid; page-break-inside: avoid; }}
figcaption {{ font-size: 11px; color: #5B6170; margin-top: 2px; }}
.fig-full {{ width: {PAGE_WIDTH_PX}px; }}
.fig-half {{ width: {HALF_WIDTH_PX}px; }}
.figs {{ display: flex; flex-wrap: wrap; gap: 0 10px; }}
.pass {{ color: #117733; }} .fail {{ color: #CC3311; font-weight: 600; }}
.checks {{ list-style: none; padding-left: 0; }}
@page {{ size: A4; margin: 12mm; }}
@media print {{
  main {{ margin: 0 auto; }}
  section {{ break-before: page; page-break-before: always; margin-top: 0; }}
  section.first {{ break-before: auto; page-break-before: auto; }}
  .modebar-container {{ display: none !important; }}
  a {{ color: inherit; text-decoration: none; }}
}}
"""


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js, as the installed plotly ships it (about 4.8 MB), read once."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


_ID = re.compile(r"[^A-Za-z0-9_-]+")


def figure_width(f: PackFigure) -> int:
    """The px the page draws ``f`` at."""
    return HALF_WIDTH_PX if f.half else PAGE_WIDTH_PX


def figure_div(f: PackFigure) -> str:
    """``f`` as a div, fitted to the width the page gives it (the app's figures are laid out for a wider column), its
    subtitle at ``SUBTITLE_PX`` in at most two lines, the sentences that do not fit leading its caption."""
    fig, rest = split_subtitle(f.figure, figure_width(f), SUBTITLE_PX)
    div = fit_width(fig, figure_width(f)).to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id="fig-" + _ID.sub("-", f.name),
        config=PLOT_CONFIG,
        default_width="100%",
    )
    cls = "fig-half" if f.half else "fig-full"
    caption = " ".join(text for text in (rest, f.caption) if text)
    return f'<figure class="{cls}">{div}<figcaption>{esc(caption)}</figcaption></figure>'


def _block(b: Block) -> str:
    if isinstance(b, PackFigure):
        return figure_div(b)
    if isinstance(b, Figures):
        return '<div class="figs">' + "".join(figure_div(f) for f in b.items) + "</div>"
    return b


def render_html(pack: ReviewPack) -> bytes:
    """The pack as one HTML page (UTF-8 bytes), the same bytes for the same pack."""
    toc = "".join(f'<li><a href="#{esc(s.id)}">{esc(s.title)}</a></li>' for s in pack.sections)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(pack.title)}</title>",
        f"<style>{CSS}</style>",
        f'<script type="text/javascript">{plotly_js()}</script>',
        "</head><body><main>",
        f'<section class="first" id="top"><h1>{esc(pack.title)}</h1>{para(pack.subtitle, "muted")}',
        pack.summary,
        f"<h3>Contents</h3><nav><ol>{toc}</ol></nav></section>",
    ]
    for s in pack.sections:
        parts.append(f'<section id="{esc(s.id)}"><h2>{esc(s.title)}</h2>')
        parts += [_block(b) for b in s.blocks]
        parts.append("</section>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts).encode("utf-8")
