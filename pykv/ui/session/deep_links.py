"""A page's own address (``/lessons?lesson=…``, a link handed to a room) served so that the browser asks only
for what exists: Streamlit's page, told where its server is.

Streamlit's frontend does not know the app's base path. On ``/lessons`` it tries ``/lessons/_stcore/health`` and
``/lessons/_stcore/host-config`` first (two 404s on every deep link and reload), then the folder above (streamlit
issue #7074). Its page reads ``window.__streamlit.BACKEND_BASE_URL`` before it connects: these routes serve the same
index.html with that set to the page's folder (``/`` or the server's ``baseUrlPath``), so the first try is the
right one. The app's own routes come before Streamlit's (``st.App``); ``/`` and every other path are Streamlit's.
tests/e2e/test_offline_browser.py loads deep links and sees no 404 and no other host.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from streamlit import config, file_util

# set before Streamlit's script runs: the server is at the page's folder (a page's path is one segment)
BASE_URL_JS = "<script>window.__streamlit = {BACKEND_BASE_URL: new URL('.', window.location.href).href};</script>"


@cache
def index_html() -> str:
    """Streamlit's index.html with BASE_URL_JS first in its head (read once: it is part of the installed package)."""
    page = (Path(file_util.get_static_dir()) / "index.html").read_text(encoding="utf-8")
    if "<head>" not in page:
        raise RuntimeError("Streamlit's index.html has no <head>: pykv/ui/session/deep_links.py needs updating")
    return page.replace("<head>", "<head>" + BASE_URL_JS, 1)


async def _page(_request: Request) -> HTMLResponse:
    return HTMLResponse(index_html(), headers={"Cache-Control": "no-cache"})  # as Streamlit serves its own


def routes(url_paths: tuple[str, ...]) -> list[Route]:
    """One route per page of the app (its url_path), under the server's base URL path if it has one."""
    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    prefix = f"/{base}" if base else ""
    return [Route(f"{prefix}/{path}", _page, methods=["GET", "HEAD"]) for path in url_paths]
