"""The Export control under a figure: a popover with SVG, PNG (1x/2x/3x) and HTML downloads, each in
the light template with the figure's caption and deep link, absolute under the lab's address
(``pykv.ui.session.lab_address``; ``pykv.review_pack.export``).

The bytes are made only when a download button is pressed: each button gets a callable, which
Streamlit runs on a thread of its own at the click, so a page rerun (a Play tick) never starts the
browser. Where static export cannot run, the SVG/PNG buttons are disabled and one line says why;
HTML always works.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Callable, Literal, TypeAlias

import plotly.graph_objects as go
import streamlit as st

from pykv.review_pack.export import DEFAULT_WIDTH, SCALES, export_html, export_image, static_export_problem
from pykv.ui.safe_text import plain
from pykv.ui.session import lab_address

FigureSource: TypeAlias = go.Figure | Callable[[], go.Figure]
Format: TypeAlias = Literal["svg", "png", "html"]
MIME = {"svg": "image/svg+xml", "png": "image/png", "html": "text/html"}


def export_bytes(
    source: FigureSource,
    fmt: Format,
    *,
    caption: str,
    link: str | None,
    scale: int = 1,
    width: int = DEFAULT_WIDTH,
    height: int | None = None,
    link_label: str = "link",
) -> bytes:
    """What a download button hands over (``source``: the light figure, or a callable that builds it)."""
    fig = source() if callable(source) else source
    if fmt == "html":
        return export_html(fig, caption=caption, link=link, width=width, height=height, link_label=link_label)
    return export_image(
        fig, fmt, scale=scale, caption=caption, link=link, width=width, height=height, link_label=link_label
    )


def file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "figure"


def export_controls(
    fig: FigureSource,
    name: str,
    caption: str,
    link: str | None,
    key: str,
    *,
    width: int = DEFAULT_WIDTH,
    height: int | None = None,
    link_label: str = "link",
) -> None:
    """An "Export" popover for one figure. ``fig``: the figure drawn on the light template, or a
    callable that draws it (so a dark page builds the light one only on a click); ``name``: the
    file name without extension; ``key``: unique on the page. ``link`` with the label "link" is a link into the app,
    relative (``?preset=...``, ``lessons?...``): the files carry it under the lab's address; any other label (the
    Sweep's "reproduce" command) is carried as it is."""
    with st.popover(
        "Export",
        icon=":material/download:",
        type="tertiary",
        key=f"{key}_export",
        on_change="rerun",
        help="Download this figure (light theme, with its caption and link)",
    ) as popover:
        if not popover.open:  # its buttons are drawn when it opens (a rerun): a Step redraws no hidden controls
            return
        stem = file_stem(name)
        problem = static_export_problem()
        scale_text = st.segmented_control(
            "PNG scale", [f"{s}x" for s in SCALES], default="2x", key=f"{key}_scale", required=True
        )
        scale = int((scale_text or "2x")[0])
        if link is not None and link_label == "link":
            link, link_label = lab_address.app_link(link)  # here, on the page's thread: the browser's address
        formats: tuple[tuple[Format, str, int], ...] = (  # (format, label, scale: export_bytes's default but PNG's)
            ("svg", "SVG", 1),
            ("png", f"PNG {scale}x", scale),
            ("html", "HTML", 1),
        )
        with st.container(horizontal=True, gap="small"):
            for fmt, label, fmt_scale in formats:
                st.download_button(
                    label,
                    data=partial(  # bound now, called at the click
                        export_bytes,
                        fig,
                        fmt,
                        caption=caption,
                        link=link,
                        scale=fmt_scale,
                        width=width,
                        height=height,
                        link_label=link_label,
                    ),
                    file_name=f"{stem}.{fmt}" if fmt != "png" else f"{stem}@{scale}x.png",
                    mime=MIME[fmt],
                    key=f"{key}_{fmt}",
                    on_click="ignore",
                    disabled=bool(problem) and fmt != "html",
                )
        if problem:
            st.caption(plain(problem))
