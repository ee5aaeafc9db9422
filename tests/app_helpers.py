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
