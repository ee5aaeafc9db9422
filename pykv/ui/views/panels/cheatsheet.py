"""The cheat sheet on the Lessons page (``/lessons?cheatsheet=1``): the printable page itself, and a
download of the very same HTML to open in a browser and print (or save as PDF) on one A4 or Letter page.
The page is ``pykv.cheatsheet.cheatsheet_html``; this module only wires it."""

from __future__ import annotations

import streamlit as st

from pykv.cheatsheet import cheatsheet_html
from pykv.lessons.format.schema import Lesson
from pykv.review_pack.deep_link import public_root
from pykv.ui.session.classroom import CLASS_PARAM, KEY_PARAM
from pykv.ui.views.panels.lesson_guide import PATH_PARAM

PARAM = "cheatsheet"
FILE_NAME = "pykv_cheatsheet.html"


def open_sheet() -> None:
    """Show the cheat sheet (the workshop path, if chosen, is kept for the way back)."""
    kept = {k: st.query_params[k] for k in (PATH_PARAM, CLASS_PARAM, KEY_PARAM) if k in st.query_params}
    st.query_params.from_dict({PARAM: "1"} | kept)  # an instructor's class and key stay


def close_sheet() -> None:
    if PARAM in st.query_params:
        del st.query_params[PARAM]


def render(lessons: list[Lesson]) -> None:
    page = cheatsheet_html(lessons, link_base=_link_base())
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="cheatsheet_controls"):
        st.button("All lessons", key="cheatsheet_close", icon=":material/list:", on_click=close_sheet)
        st.download_button(
            "Download to print",
            page,
            file_name=FILE_NAME,
            mime="text/html",
            key="cheatsheet_download",
            icon=":material/print:",
            on_click="ignore",
            help="The same page as one HTML file: open it in a browser and print it (or save it as a "
            "PDF). It fits one A4 or Letter page.",
        )
    st.html(page)


def _link_base() -> str:
    """Where the sheet's lesson links point: under PYKV_PUBLIC_URL when the host set it (a printed or shared
    sheet opens the room's address, not the instructor's localhost), else this page's own address when the
    browser gave it (so the links of a downloaded copy still open the lab), else the relative "lessons"."""
    root = public_root()
    if root:
        return f"{root}/lessons"
    try:
        url = st.context.url
    except Exception:  # noqa: BLE001 - no browser context (a test, a bare run): relative links
        url = None
    if not url or not url.startswith(("http://", "https://")):
        return "lessons"
    return url.split("#", 1)[0].split("?", 1)[0]
