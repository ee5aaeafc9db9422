"""Issue 50 #4 on the Your server page: a read stops at its CPU budget and says so in one line, and a read whose
tab is gone is cancelled."""

from __future__ import annotations

import pytest
from app_helpers import diagnosed
from streamlit.testing.v1 import AppTest

STATS = (
    "INFO 06-16 21:24:{s:02d} metrics.py:341] Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 5.0 "
    "tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 1 reqs, GPU KV cache usage: 90.0%, "
    "CPU KV cache usage: 0.0%.\n"
)


@pytest.fixture
def app(server_app) -> AppTest:
    return server_app


def everything_said(app: AppTest) -> str:
    return " ".join([e.value for e in app.error] + [c.value for c in app.caption] + [m.value for m in app.markdown])


def test_a_read_past_its_cpu_budget_stops_and_says_why(app, monkeypatch):
    from pykv.ui.pages import server

    monkeypatch.setattr(server, "READ_BUDGET_S", 0.0)
    diagnosed(app, "".join(STATS.format(s=i % 60) for i in range(5000)))
    said = everything_said(app)
    assert "reading stopped after" in said and "of CPU time" in said


def test_a_read_whose_tab_is_gone_is_cancelled(app, monkeypatch):
    from pykv.ui.session import budgets

    monkeypatch.setattr(budgets, "session_gone", lambda: lambda: True)
    diagnosed(app, "".join(STATS.format(s=i % 60) for i in range(5000)))
    assert "the page that asked for it was closed" in everything_said(app)
    assert "server_diagnosis" not in app.session_state
