"""A lesson's "Your turn → Open in the Playground" link in a real browser: it must land on the Playground with
the exercise panel, not on Streamlit's "Page not found" dialog (the Playground is the default page, which
Streamlit serves at the app's root and not at ``/playground``)."""

from __future__ import annotations

TIMEOUT_MS = 120_000
LESSON, STEP = "what-triggers-preemption", 3  # lesson 2 step 3: the smallest pool without a preemption


def test_open_in_the_playground_lands_on_the_exercise(browser, tiny_app_url):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(f"{tiny_app_url}/lessons?lesson={LESSON}&step={STEP}")
        page.get_by_role("button", name="Just show me").click()  # the step asks its question first
        link = page.locator(".st-key-lesson_exercise a").filter(has_text="Open in the Playground").first
        link.wait_for()
        with context.expect_page() as opened:
            link.click()
        tab = opened.value
        tab.set_default_timeout(TIMEOUT_MS)
        tab.locator(".st-key-exercise_panel").get_by_text("Your turn").first.wait_for()
        tab.locator(".js-plotly-plot").filter(has_text="Device KV pool").first.wait_for()
        assert not tab.get_by_text("Page not found").count()
        assert f"exercise={LESSON}.{STEP}" in tab.url
        assert not tab.get_by_test_id("stException").count()
    finally:
        context.close()
