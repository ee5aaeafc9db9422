"""The Your server page's what-if: the first fixes of the tuning order, each said in the lab's scaled units and at
the server's own scale beside them (``pykv.lab.server_scale``), run on the replay, throughput priced on the model
the log names (``pykv.lab.target_from_log``) or the one picked here, on the GPU picked here."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from pykv.bridge import Diagnosis
from pykv.lab.server_replay import ReplayPlan
from pykv.lab.server_scale import at_server_scale
from pykv.lab.target_from_log import LogModel, log_model
from pykv.lab.what_if import WHAT_IF_ROWS, LabFix, ReplayOutcome, suggested_fixes, what_if
from pykv.ui.safe_text import plain
from pykv.ui.session import state
from pykv.ui.views.widgets import target

PICKER = "server_"  # the picker's key prefix on this page
RESULT = "server_what_if_result"  # st.session_state: (fix labels, target, outcomes)


def render(d: Diagnosis, plan: ReplayPlan) -> None:
    fixes = suggested_fixes(d, plan)
    st.subheader("What if")
    if not fixes:
        st.caption("No step of the tuning order applies to this replay.")
        return
    found = _target_from_log(d)
    st.caption(plain(found.note()[0].upper() + found.note()[1:]) + ". The log does not name its GPU: pick it here.")
    est = target.picker(PICKER)
    tgt = target.current()
    lines = [
        f"{i}. **In the lab**: {plain(fix.label)}.  \n**On your server**: {plain(at_server_scale(fix, plan, d, est))}"
        for i, fix in enumerate(fixes, 1)
    ]
    st.markdown(
        "The first fixes of the tuning order the findings point to, each applied to the replay on its own. The lab "
        "is scaled, so each change is said twice: as the lab makes it, and what the same change is at your "
        "server's scale:\n\n" + "\n".join(lines) + "\n\nEvery run goes to completion (seconds to a minute); "
        f"throughput is modelled on {est.label} from the schedule the lab really ran."
    )
    labels = tuple(fix.label for fix in fixes)
    if st.button("Run the replay with and without the fixes", key="server_what_if", icon=":material/compare_arrows:"):
        loaded = state.model_for(plan.config)
        with st.spinner("Running the replay…"):
            st.session_state[RESULT] = (labels, tgt, what_if(plan, fixes, loaded, tgt))
    outcomes = what_if_outcomes(fixes)
    if outcomes:
        _table(outcomes)


def _target_from_log(d: Diagnosis) -> LogModel:
    """The model the log names, matched to the catalogue; set as the session's target once per diagnosis (the
    picker then shows it, and a choice made after stays)."""
    found = log_model(getattr(d.config, "model", None))
    if st.session_state.get("server_target_for") is not d:
        st.session_state.server_target_for = d
        if found.catalogue is not None and target.current().model != found.catalogue:
            st.session_state.target = replace(target.current(), model=found.catalogue)
            for name in ("gpu", "model", "dtype", "tp"):  # the picker's widgets redraw from the new target
                st.session_state.pop(f"{PICKER}target_{name}", None)
    return found


def what_if_outcomes(fixes: list[LabFix]) -> list[ReplayOutcome]:
    """The what-if this session ran for these fixes on the current target ([] if none yet)."""
    result = st.session_state.get(RESULT)
    if result is None or result[0] != tuple(fix.label for fix in fixes) or result[1] != target.current():
        return []
    return result[2]


def _table(outcomes: list[ReplayOutcome]) -> None:
    columns = ["as planned"] + [f"fix {i}" for i in range(1, len(outcomes))]
    rows = [[label] + [fmt.format(getattr(o, field)) for o in outcomes] for label, field, fmt in WHAT_IF_ROWS]
    rows[3][0] = f"output tokens/s ({outcomes[0].target_label})"
    st.dataframe(pd.DataFrame(rows, columns=[""] + columns), hide_index=True, key="server_what_if_table")
    if not all(o.done for o in outcomes):
        st.caption("A run stopped at its step limit before finishing: its figures are of the steps it ran.")
