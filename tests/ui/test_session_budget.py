"""A session's engine-time allowance counts the CPU time its own engine work took, not the wall time: on a server
a whole room shares, every learner's run takes longer, and wall time spent one learner's allowance on the others'."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from pykv.ui.session import budgets


@pytest.fixture
def budget(monkeypatch):
    found = budgets.SessionBudget()
    monkeypatch.setattr(budgets, "session_budget", lambda: found)
    monkeypatch.setattr(budgets, "session_gone", lambda: lambda: False)
    return found


def _spent(budget) -> float:
    return budgets.SESSION_COMPUTE_S - budget.remaining()


def test_waiting_for_the_cores_costs_the_session_nothing(budget):
    lab = SimpleNamespace(stopped_early=None)
    waited = lambda time_budget_s, should_stop: time.sleep(0.3)  # noqa: E731  (the other sessions' runs)
    assert budgets.run_action(lab, "Run to end", waited, 60.0) is None
    assert _spent(budget) < 0.05


def test_the_engine_work_itself_is_charged(budget):
    lab = SimpleNamespace(stopped_early=None)

    def worked(time_budget_s, should_stop):
        until = time.thread_time() + 0.3
        while time.thread_time() < until:
            pass

    budgets.run_action(lab, "Run to end", worked, 60.0)
    assert 0.3 <= _spent(budget) < 0.6


def test_a_spent_allowance_stops_the_next_action_with_a_message(budget):
    budget.charge(budgets.SESSION_COMPUTE_S)
    ran = []
    message = budgets.run_action(
        SimpleNamespace(stopped_early=None), "Run to end", lambda time_budget_s, should_stop: ran.append(1), 60.0
    )
    assert not ran and message.startswith("Run to end did not run") and "engine time" in message
