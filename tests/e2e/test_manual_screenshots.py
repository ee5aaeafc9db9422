"""Every page the manual shows a picture of can be reached, in a real browser on the shipped model, as the manual
shows it (testkit/manual_shots.py: the page, what a person does first, what must be on screen). The same test
writes the pictures:

    PYKV_WRITE_SCREENSHOTS=1 python -m pytest tests/e2e/test_manual_screenshots.py

(then look at docs/img/*.png, and commit them with the change that moved the pages)."""

from __future__ import annotations

import os

import pytest

from testkit.manual_shots import SHOTS, VIEWPORT, take

WRITING = os.environ.get("PYKV_WRITE_SCREENSHOTS") == "1"


@pytest.mark.slow  # a minute or two: six pages, a class started, an example log read
def test_every_page_the_manual_shows_can_be_reached(browser, tiny_app_url):
    # The worker's shared server: no other file starts a class on it, so the one started here crowds out none.
    failed = []
    for shot in SHOTS:
        context = browser.new_context(viewport=VIEWPORT, color_scheme="light", device_scale_factor=1)
        page = context.new_page()
        try:
            take(page, tiny_app_url, shot, writing=WRITING)
        except Exception as e:  # every page is tried: the message names each one that failed
            failed.append(f"{shot.name} ({shot.path}): {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        finally:
            context.close()
    assert not failed, "the manual shows pages that cannot be reached:\n" + "\n".join(failed)
