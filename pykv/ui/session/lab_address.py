"""The lab's own address, for the links a download names (an exported figure, a review pack), so that a link pasted
into a design doc can be clicked: ``PYKV_PUBLIC_URL`` where the host set it, else the address this browser used,
less the page's path (``http://host:8501/lessons`` -> ``http://host:8501``); None where neither is known (a bare run,
a test), and then the link stays relative and says so (``pykv.review_pack.deep_link``)."""

from __future__ import annotations

import streamlit as st

from pykv.review_pack.deep_link import RELATIVE_LABEL, app_address, public_root
from pykv.ui.session import routes


def lab_root() -> str | None:
    """The lab's address without a trailing slash, or None. Call it from the page's script thread (a download
    button's callable runs on a thread of its own, where the browser's address is not known)."""
    if root := public_root():
        return root
    try:
        url = st.context.url  # the address without its query, with the page's path (none on the default page)
    except Exception:  # noqa: BLE001 - no browser context (a bare run, a test)
        url = None
    if not url or not url.startswith(("http://", "https://")):
        return None
    base, _, last = url.split("#", 1)[0].split("?", 1)[0].rstrip("/").rpartition("/")
    return base if last in routes.url_paths() and "//" in base else f"{base}/{last}"


def app_link(link: str) -> tuple[str, str]:
    """(``link`` under the lab's address, "link"), or (``link`` as it is, a label that says it is relative)."""
    root = lab_root()
    return (app_address(link, root), "link") if root else (link, RELATIVE_LABEL)
