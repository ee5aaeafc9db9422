"""The Your server page says what the CLI says (issue 46, verdicts 2-3): a counter read once is a floor since
start-up, a release that cannot show preemptions says so, never a zero."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import diagnosed
from streamlit.testing.v1 import AppTest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"


@pytest.fixture
def app(server_app) -> AppTest:
    return server_app


def paste(app: AppTest, name: str) -> AppTest:
    return diagnosed(app, (FIXTURES / name).read_text())


def captions(app: AppTest) -> str:
    return " ".join(c.value for c in app.caption).replace("\\", "").replace("`", "")


def test_one_scrape_shows_its_counter_as_a_floor_since_start_up(app):
    paste(app, "v1_0_33_0_one_scrape.metrics")
    assert app.metric[0].value == "4,821"
    assert "Preemptions: at least 4,821 since start-up" in captions(app)
    labels = [e.label.replace("\\", "") for e in app.expander]
    assert any(label.startswith("Preemption storm: at least 4,821 preemptions since start-up") for label in labels)


def test_an_old_release_is_not_visible_never_zero(app):
    paste(app, "v0_4_2_saturated.log")
    assert app.metric[0].value == "not visible"
    assert "Preemptions: not visible in this release" in captions(app)
    assert any(e.label.startswith("Likely preemption storm") for e in app.expander)
    assert not app.success  # never "Nothing here looks like KV-cache trouble"
