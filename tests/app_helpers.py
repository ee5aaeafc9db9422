"""What the AppTest files share: the app and its pages as scripts, a run that raised nothing, the step on screen,
the narration and the messages shown. The fixtures that open them are in tests/ui/conftest.py."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
ADD = "FormSubmitter:add_request-Queue it at this step"


def lessons_page():
    from pykv.ui.pages import lessons

    lessons.render()


def sweep_page():
    from pykv.ui.pages import sweep

    sweep.render()


def server_page():
    from pykv.ui.pages import server

    server.render()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    return at


def opened(at: AppTest, **params: str) -> AppTest:
    """Run ``at`` with these query parameters (a link): it raised nothing."""
    for name, value in params.items():
        at.query_params[name] = value
    return ok(at.run())


def shown_step(at: AppTest, *, url: bool = True) -> int:
    """The Playground's step in the header; ``url``: checked against the URL's ?step=."""
    header = next(m.value for m in at.markdown if m.value.startswith("**Step "))
    step = int(header.split("**")[1].split()[1])
    if url:
        assert at.query_params["step"] in ([str(step)], str(step))
    return step


def narration(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown if m.value.startswith("- "))


def messages(at: AppTest) -> list[str]:
    """The warnings, errors and notes on the page."""
    return [e.value for e in [*at.warning, *at.error, *at.info]]


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


def diagnosed(at: AppTest, text: str) -> AppTest:
    """The Your server page with ``text`` pasted and Diagnose pressed."""
    ok(at.run())
    at.text_area(key="server_paste").input(text)
    return ok(at.button(key="FormSubmitter:server_input-Diagnose").click().run())
