"""Verdict 9 in a real browser: a server replay's link, opened in a NEW browser context (no cookie, no session, as
a colleague from the incident channel opens it), shows the same replay as the session that made it: the same
request count, the same step and the same figures at that step. The replay opens at the top of the page, with the
way back to the diagnosis. Screenshots of both go to artifacts/."""

from __future__ import annotations

import re

from testkit.page_wait import wait_settled

TIMEOUT_MS = 180_000
VIEWPORT = {"width": 1440, "height": 900}
EXAMPLE = "v1-0.33-preemption-storm.log"
MAIN_SCROLL = "() => (document.querySelector('[data-testid=\"stMain\"]') || document.scrollingElement).scrollTop"


def replay_state(page) -> dict:
    """What a person compares: the banner's request count, the step, and the step's first metrics (KV usage,
    preemptions, recomputed tokens: not the measured step time)."""
    page.locator('[data-testid="stMetricValue"]').nth(2).wait_for()  # the live view draws after the banner
    wait_settled(page, timeout_ms=TIMEOUT_MS)
    banner = page.locator(".st-key-replay_banner").inner_text()
    step = re.search(r"Step (\d+)", page.get_by_text(re.compile(r"^Step \d+")).first.inner_text()).group(1)
    values = page.locator('[data-testid="stMetricValue"]').all_inner_texts()[:3]
    return {"requests": re.search(r"(\d+) requests", banner).group(1), "step": step, "metrics": values}


def test_a_replay_link_opens_the_same_replay_in_a_new_browser_context(browser, tiny_app_url, artifacts):
    origin = browser.new_context(viewport=VIEWPORT)
    page = origin.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    colleague = browser.new_context(viewport=VIEWPORT)
    try:
        page.goto(f"{tiny_app_url}/server")
        page.locator('[data-testid="stSelectbox"]').filter(has_text="try an example log").click()
        page.get_by_role("option", name=EXAMPLE).click()
        page.get_by_text("Replay it in the lab").first.wait_for()
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        page.get_by_role("button", name="Open it in the Playground at the first preemption").click()
        page.locator(".st-key-replay_banner").wait_for()
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        link = page.url
        assert "replay=" in link and "preset=none" in link
        seen = replay_state(page)
        assert int(seen["step"]) > 0 and int(seen["metrics"][1]) > 0  # opened at its first preemption
        assert page.evaluate(MAIN_SCROLL) == 0  # at the top, not scrolled to the bottom
        page.screenshot(path=str(artifacts / "replay-link-origin.png"), full_page=False)
        back = page.get_by_role("link", name="Back to the diagnosis")
        back.wait_for(timeout=10_000)

        tab = colleague.new_page()
        tab.set_default_timeout(TIMEOUT_MS)
        tab.goto(link)
        tab.locator(".st-key-replay_banner").wait_for()
        wait_settled(tab, timeout_ms=TIMEOUT_MS)
        assert replay_state(tab) == seen
        assert not tab.get_by_test_id("stException").count()
        assert "The run ends at step 0" not in tab.inner_text("body")
        tab.screenshot(path=str(artifacts / "replay-link-colleague.png"), full_page=False)

        back.click()  # the way back: the diagnosis is still there
        page.get_by_text("Replay it in the lab").first.wait_for()
    finally:
        colleague.close()
        origin.close()
