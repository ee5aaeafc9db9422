"""Time budgets for the actions that run the engine (a deep link's replay, Run to end, Next
preemption) and a session's engine-time allowance over a sliding window; an action stops when its
browser session is gone."""

from __future__ import annotations

import time
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterator

import streamlit as st

from pykv.lab.lab import Lab

# Time budgets (seconds of engine work). One action: a deep link's replay, Run to end, Next preemption.
DEEP_LINK_BUDGET_S = 20.0  # ~20 ms a replayed storm step on a quiet 2-core CPU: ~1,000 steps, then the page says so
RUN_TO_END_BUDGET_S = 60.0
NEXT_PREEMPTION_BUDGET_S = 30.0
LESSON_ACTION_BUDGET_S = 30.0  # one lesson action (step N, run_until); the course's take well under 1 s
# One session: at most this much engine time within any window of SESSION_WINDOW_S (20 tabs x 10 links cannot
# keep the server's cores busy for ever; a learner clicking Run to end now and then never notices). Counted as the
# CPU time the session's own engine work took (the engine runs on one thread: pykv.border.runtime), not as wall time:
# on a server shared by a room every run takes longer, and wall time would spend a learner's allowance on the
# others' runs (20 learners bisecting lesson 2's pool ran out after three or four tries).
SESSION_COMPUTE_S = 180.0
SESSION_WINDOW_S = 600.0


class SessionBudget:
    """Engine time spent by one session over the last SESSION_WINDOW_S seconds."""

    def __init__(self) -> None:
        self.spent: deque[tuple[float, float]] = deque()  # (when it ended, seconds)

    def remaining(self) -> float:
        now = time.monotonic()
        while self.spent and now - self.spent[0][0] > SESSION_WINDOW_S:
            self.spent.popleft()
        return SESSION_COMPUTE_S - sum(s for _, s in self.spent)

    def charge(self, seconds: float) -> None:
        self.spent.append((time.monotonic(), seconds))


def session_budget() -> SessionBudget:
    return st.session_state.setdefault("compute_budget", SessionBudget())


@contextmanager
def charged() -> Iterator[SessionBudget]:
    """Charge the engine work done inside to this session's allowance (this script thread's CPU time, as
    ``run_action`` counts it); yields the budget, to read what is left."""
    budget = session_budget()
    cpu_start = time.thread_time()
    try:
        yield budget
    finally:
        budget.charge(time.thread_time() - cpu_start)


def session_gone() -> Callable[[], bool]:
    """A cheap check, for loops between engine steps, that this browser session has disconnected
    (Streamlit then only asks the script to stop, which a pure-Python loop never sees)."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():  # bare mode, AppTest: no websocket to lose
        return lambda: False
    instance, session_id = runtime.get_instance(), ctx.session_id
    return lambda: not instance.is_active_session(session_id)


def run_action(lab: Lab, what: str, action: Callable[..., object], budget_s: float, *args) -> str | None:
    """Run ``action(*args, time_budget_s=..., should_stop=...)`` on ``lab`` within the action's and the
    session's budgets; the message to show when it stopped early (and why), else None."""
    budget = session_budget()
    left = budget.remaining()
    if left <= 0:
        return (
            f"{what} did not run: this session used its {SESSION_COMPUTE_S:g} s of engine time for the last "
            f"{SESSION_WINDOW_S / 60:g} minutes (a shared server). Try again in a few minutes."
        )
    allowed = min(budget_s, left)
    with charged():  # this script thread's CPU time: the engine's work, whatever else runs
        action(*args, time_budget_s=allowed, should_stop=session_gone())
    if lab.stopped_early is None:
        return None
    why = lab.stopped_early
    if allowed < budget_s and "time budget" in why:
        why = f"this session has {allowed:.0f} s of its {SESSION_COMPUTE_S:g} s engine-time allowance left"
    return f"{what} stopped early at step {lab.cursor}: {why}. Press it again to go on."
