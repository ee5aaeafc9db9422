"""A server replay that travels: the Playground link's ``replay=`` parameter (``pykv.lab.replay_spec``) carries the
replay's workload, so the link opens the same run in any browser session; the address bar keeps it for as long as
the session's Lab runs that workload (Apply with the preset "none" keeps it; another preset drops it)."""

from __future__ import annotations

import streamlit as st

from pykv.border.workload import Workload
from pykv.lab.lab import Lab
from pykv.lab.replay_spec import REPLAY_PARAM, decode, encode, spec_workload
from pykv.lab.server_replay import ReplayPlan
from pykv.ui.safe_text import plain

KEY = "replay_link"  # st.session_state: (token, the Workload built from it)


def workload_from_link(params: dict[str, str]) -> Workload | None:
    """The workload a link's ``replay=`` rebuilds (remembered for the address bar); None, after a warning that says
    what was wrong, when the link has none or a bad one."""
    token = params.get(REPLAY_PARAM)
    if token is None:
        return None
    try:
        workload = spec_workload(decode(token))
    except ValueError as e:
        st.warning(f"{plain(e)}. The preset is used instead.")
        return None
    st.session_state[KEY] = (token, workload)
    return workload


def remember(plan: ReplayPlan) -> None:
    """The plan's workload, opened in this session, keeps its token in the address bar."""
    if plan.spec is not None:
        st.session_state[KEY] = (encode(plan.spec), plan.workload)


def query_part(lab: Lab) -> dict[str, str]:
    """``{"replay": token}`` while the Lab runs the workload a replay built, else nothing."""
    kept = st.session_state.get(KEY)
    return {REPLAY_PARAM: kept[0]} if kept is not None and lab.workload is kept[1] else {}
