"""What the AppTest files share: the lessons page as a script, a run that raised nothing, the step on screen."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest


def lessons_page():
    from pykv.ui.pages import lessons

    lessons.render()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    return at


def step_line(at: AppTest) -> tuple[int, int]:
    """(k, n) from the player's "step k of n" line."""
    line = next(m.value for m in at.markdown if re.search(r"· step \d+ of \d+$", m.value))
    k, n = map(int, re.search(r"step (\d+) of (\d+)$", line).groups())
    return k, n


def open_tab(at: AppTest, label: str, key: str = "details_first") -> AppTest:
    """Open a detail tab of the live views (Requests, Preemption costs, ...) and rerun: only the open tab is drawn.
    ``key``: the tabs' key (the Playground's when no lesson step names a tab; ``details_key`` finds a lesson's)."""
    at.session_state[key] = label
    return ok(at.run())


def details_key(at: AppTest, prefix: str = "") -> str:
    """The key of the detail tabs on the page: ``{prefix}details_{the tab a lesson step opens on, or first}``."""
    from pykv.ui.views.players.live_views import TABS

    found = [key for key in (f"{prefix}details_{name}" for name in ["first", *TABS]) if key in at.session_state]
    assert len(found) == 1, found
    return found[0]
