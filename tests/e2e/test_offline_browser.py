"""A room without the internet, in a real browser: every page, opened at its own address as a link handed to a
room opens it (a lesson step on the projector, the Playground, About), asks the app's own server only (its icon
is shipped, pykv/ui/icon.svg, not a font host's) and gets no 404 (Streamlit's frontend first looked for its
server under the page's path: pykv/ui/session/deep_links.py)."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from testkit.page_wait import wait_settled

TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def lesson():
    from pykv.ui.session.course_files import course

    lessons, _ = course()
    if not lessons:
        pytest.skip("no lesson files in lessons/")
    return lessons[0]


def _cancelled(request, app: str) -> bool:
    """The app's own asset whose load the next page.goto cut short (net::ERR_ABORTED; CI once caught a font so):
    not what an offline room lacks, which fails to resolve or connect, or answers 404."""
    return urlparse(request.url).netloc == app and "ERR_ABORTED" in (request.failure or "")


def test_deep_links_ask_only_the_apps_server_and_get_no_404(browser, tiny_app_url, lesson):
    app = urlparse(tiny_app_url).netloc
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    asked: list[str] = []
    failed: list[str] = []
    context.on("request", lambda request: asked.append(request.url))
    context.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    context.on(
        "requestfailed", lambda request: None if _cancelled(request, app) else failed.append(f"failed {request.url}")
    )
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        for path in (f"/lessons?lesson={lesson.id}&step=2&presenter=1", "/playground", "/about", "/lessons/"):
            page.goto(tiny_app_url + path)
            wait_settled(page, timeout_ms=TIMEOUT_MS)
            page.get_by_test_id("stMain").first.wait_for()
            icons = page.evaluate("() => [...document.querySelectorAll('link[rel~=icon]')].map(l => l.href)")
            assert icons and all(href.startswith(("data:", tiny_app_url)) for href in icons), icons
        assert page.title() == "pykv lab" and not page.get_by_test_id("stException").count()
        elsewhere = [url for url in asked if urlparse(url).scheme in ("http", "https", "ws", "wss")]
        elsewhere = [url for url in elsewhere if urlparse(url).netloc != app]
        assert not elsewhere, elsewhere  # e.g. the :material: page icon from a font host, which offline rooms lack
        assert not failed, failed  # e.g. /lessons/_stcore/health
        assert any("/_stcore/health" in url for url in asked)  # the frontend did look for its server
    finally:
        context.close()
