"""The pack as a zip: the HTML page, every figure as SVG and PNG, the CSVs, the other files and a README.
When static export cannot run here the zip still comes, without images and with a README that says
why. Deterministic: same pack, same bytes (fixed member times and order)."""

from __future__ import annotations

import io
import zipfile
from urllib.parse import parse_qsl, urlencode

from pykv.review_pack.deep_link import RELATIVE_LABEL, RELATIVE_NOTE, absolute
from pykv.review_pack.export import DEFAULT_WIDTH, ExportUnavailable, export_image
from pykv.review_pack.page import PAGE_WIDTH_PX, PackFigure, ReviewPack, render_html

HTML_NAME = "review.html"
PNG_SCALE = 2
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def export_figures(pack: ReviewPack) -> tuple[dict[str, bytes], str | None]:
    """``figures/NAME.svg`` and ``.png`` for every figure, or ({}, why) when static export is unavailable."""
    out: dict[str, bytes] = {}
    try:
        for f in pack.figures():
            for fmt in ("svg", "png"):
                out[f"figures/{f.name}.{fmt}"] = export_image(
                    f.figure,
                    fmt,
                    scale=PNG_SCALE if fmt == "png" else 1,
                    caption=f.caption,
                    link=link_at_step(pack.link, f.step) if f.linked else None,
                    link_label="link" if absolute(pack.link) else RELATIVE_LABEL,
                    width=export_width(f),
                )
    except ExportUnavailable as e:
        return {}, str(e) or type(e).__name__
    return out, None


def export_width(f: PackFigure) -> int:
    """The px a figure's SVG and PNG are laid out at: small multiples narrower (the image is fitted to it)."""
    return PAGE_WIDTH_PX if f.half else DEFAULT_WIDTH


def link_at_step(link: str | None, step: int | None) -> str | None:
    """The pack's deep link opened at ``step`` instead (a grid of an early step must not link to the last)."""
    if link is None or step is None:
        return link
    base, _, query = link.partition("?")
    params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "step"] + [("step", str(step))]
    return f"{base}?{urlencode(params)}"


def readme(pack: ReviewPack, names: list[str], problem: str | None) -> str:
    lines = [
        pack.title,
        "",
        pack.subtitle,
        "",
        f"{HTML_NAME}: the whole pack as one page; it needs no network "
        "(plotly.js is inside) and prints to PDF one section per page.",
        "",
    ]
    if problem:
        lines += [
            "NO SVG/PNG FIGURES IN THIS ZIP: static export could not run where the pack was made.",
            f"Why: {problem}",
            f"Every figure is still in {HTML_NAME} (interactive), and every table is in the CSVs.",
            "",
        ]
    if pack.link and absolute(pack.link):
        lines += [f"Link into the lab: {pack.link}", ""]
    elif pack.link:
        lines += [f"Link into the lab (relative): {pack.link}", RELATIVE_NOTE, ""]
    lines += ["Files:"] + [f"  {name}" for name in names]
    return "\n".join(lines) + "\n"


def build_zip(pack: ReviewPack, html: bytes | None = None) -> bytes:
    """The zip's bytes. ``html`` is the page if already rendered (else it is rendered here)."""
    return bundle(pack, html)[0]


def bundle(pack: ReviewPack, html: bytes | None = None) -> tuple[bytes, str | None]:
    """(the zip's bytes, why it has no SVG/PNG figures or None)."""
    figures, problem = export_figures(pack)
    members: dict[str, bytes] = {HTML_NAME: html if html is not None else render_html(pack)}
    members |= {name: text.encode("utf-8") for name, text in pack.csvs.items()}
    members |= {name: text.encode("utf-8") for name, text in pack.files.items()}
    members |= figures
    members = {"README.txt": readme(pack, list(members), problem).encode("utf-8")} | members
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    return buffer.getvalue(), problem
