"""Issue 48 #13 in a real browser: an exported figure and a review pack made in the app link to the lab under the
address the browser used (no PYKV_PUBLIC_URL), so that pasted into a design doc the link can be clicked."""

from __future__ import annotations

import re

from testkit.page_wait import wait_settled

TIMEOUT_MS = 120_000  # a bound on failure only: a first load on a busy 2-core machine can take 40 s


def download(page, popover: str, button: str) -> str:
    """Open a popover by its key, press one of its download buttons, and return the file's text."""
    page.locator(f".st-key-{popover} button").first.click()
    with page.expect_download() as got:
        page.locator(f".st-key-{button} button").click()
    page.keyboard.press("Escape")
    wait_settled(page, timeout_ms=TIMEOUT_MS)
    return got.value.path().read_text()


def test_exports_made_in_the_app_link_under_the_address_the_browser_used(browser, app_url, artifacts):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(app_url)
        page.get_by_text(re.compile(r"^Step 0\b")).first.wait_for()
        page.locator(".js-plotly-plot").filter(has_text="Queues").first.wait_for()
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        svg = download(page, "queues_export", "queues_svg")
        (artifacts / "export_link_queues.svg").write_text(svg)
        link = f"{app_url}/?preset=storm&amp;step=0"
        assert f"link: {link}<" in svg, re.findall(r"link[^<]*", svg)
        pack = download(page, "playground_review_pack", "playground_review_html")
        assert f'<pre class="link"><a href="{link}">{link}</a></pre>' in pack
        assert "the link is relative" not in pack
    finally:
        context.close()
