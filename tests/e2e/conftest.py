"""Real-browser fixtures: `streamlit run app.py` on localhost (on a random checkpoint) and Debian's
headless Chromium driven by Playwright. Skipped where either is missing; .ci/run installs both."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.streamlit_server import CHROMIUM, CHROMIUM_FLAGS, LAYOUT_PROBE, ROOT, serve_app

ARTIFACTS = ROOT / "artifacts"


@pytest.fixture(scope="session")
def app_url(random_llama_path):
    with serve_app(random_llama_path) as url:
        yield url


@pytest.fixture(scope="session")
def tiny_app_url():
    """The app on the shipped model, which the lessons are written for: one server for the worker's files
    (starting one and loading the model costs ~10 s), the side runs it measured kept for the next file."""
    with serve_app("tiny") as url:
        yield url


@pytest.fixture(scope="module")
def tiny_class_app_url():
    """The app on the shipped model, for one file that starts classes: a server of its own, so the classes an
    earlier file left live (3 per client address at most, all tests being 127.0.0.1) do not count."""
    with serve_app("tiny") as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def fit_page(browser):
    """One page for a projector-fit file's lesson walks, each of which opens its lesson afresh (a new session):
    a page kept across them keeps Chromium's compiled copy of the app's scripts, which a new context per lesson
    compiled again (~1 s of CPU a lesson)."""
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def tiny_probe_url():
    """The app on the shipped model with its charts drawn as empty boxes of their heights
    (testkit/layout_probe_app.py): what the projector-fit walks measure."""
    with serve_app("tiny", script=LAYOUT_PROBE) as url:
        yield url


@pytest.fixture(scope="module")
def tiny_class_probe_url():
    """As tiny_class_app_url (a server of its own for one file that starts classes), with its charts as boxes."""
    with serve_app("tiny", script=LAYOUT_PROBE) as url:
        yield url
