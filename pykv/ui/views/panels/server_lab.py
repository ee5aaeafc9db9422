"""A real server's pressure in the lab: the replay plan (what the scaling keeps and what it cannot), opening it
in the Playground at its first preemption, the what-if with the suggested fix, and the baseline to keep."""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from pykv.bridge import Diagnosis, compare
from pykv.bridge.baseline import baseline_body, baseline_bytes, parse_baseline
from pykv.lab.server_replay import ReplayPlan, plan_replay
from pykv.lab.what_if import WHAT_IF_ROWS, LabFix, ReplayOutcome, suggested_fixes, what_if
from pykv.review_pack.page import render_html
from pykv.review_pack.server import server_pack
from pykv.ui.safe_text import error_line, plain
from pykv.ui.session import routes, state
from pykv.ui.views.widgets import target


def replay(d: Diagnosis) -> ReplayPlan:
    st.subheader("Replay it in the lab")
    loaded = state.model_for(state.default_config())
    plan = plan_replay(d, loaded.config.vocab_size)
    c = plan.config
    st.markdown(
        f"{plain(plan.profile_reason)}. The lab runs **{len(plan.workload.requests)} requests** of "
        f"{c.block_size}-token blocks on a pool of **{c.num_gpu_blocks} blocks**, max_num_seqs "
        f"{c.max_num_seqs}, on the shipped model."
    )
    left, right = st.columns(2)
    left.markdown("**What the scaling keeps**\n\n" + "\n".join(f"- {plain(k)}" for k in plan.keeps))
    right.markdown("**What it cannot keep**\n\n" + "\n".join(f"- {plain(k)}" for k in plan.cannot_keep))
    if st.button(
        "Open it in the Playground at the first preemption",
        key="server_open_playground",
        icon=":material/play_arrow:",
        type="primary",
    ):
        _open_in_playground(plan)
    return plan


def _open_in_playground(plan: ReplayPlan) -> None:
    try:
        lab = state.make_lab(plan.config, None, plan.config.seed, plan.workload)
    except ValueError as e:  # ServerFull, ModelError, the engine's refusal: one line
        st.error(plain(e))
        return
    with st.spinner("Running the replay to its first preemption…"):
        lab.run_to_next_preemption(time_budget_s=30.0)
    old = st.session_state.get("lab")
    if old is not None:
        old.release()
    st.session_state.lab = lab
    st.switch_page(routes.page("playground"))


def what_if_panel(d: Diagnosis, plan: ReplayPlan) -> None:
    fixes = suggested_fixes(d, plan)
    st.subheader("What if")
    if not fixes:
        st.caption("No step of the tuning order applies to this replay.")
        return
    tgt = target.current()
    st.markdown(
        "The first fixes of the tuning order the findings point to, each applied to the replay on its own:\n"
        + "\n".join(f"{i}. {plain(fix.label)}" for i, fix in enumerate(fixes, 1))
        + f"\n\nEvery run goes to completion (seconds to a minute); throughput is modelled on {tgt.gpu} + "
        f"{tgt.model} from the schedule the lab really ran."
    )
    labels = tuple(fix.label for fix in fixes)
    if st.button("Run the replay with and without the fixes", key="server_what_if", icon=":material/compare_arrows:"):
        loaded = state.model_for(plan.config)
        with st.spinner("Running the replay…"):
            st.session_state.server_what_if_result = (labels, what_if(plan, fixes, loaded, tgt))
    outcomes = what_if_outcomes(fixes)
    if outcomes:
        _what_if_table(outcomes)


def what_if_outcomes(fixes: list[LabFix]) -> list[ReplayOutcome]:
    """The what-if this session ran for these fixes ([] if none yet)."""
    result = st.session_state.get("server_what_if_result")
    return result[1] if result is not None and result[0] == tuple(fix.label for fix in fixes) else []


def pack_button(d: Diagnosis, plan: ReplayPlan) -> None:
    """The review pack of this diagnosis (with the what-if once it ran): one offline HTML page."""
    fixes = suggested_fixes(d, plan)
    outcomes = what_if_outcomes(fixes)

    def page() -> bytes:
        try:
            return render_html(server_pack(d, plan, fixes if outcomes else [], outcomes))
        except Exception as e:  # built at the click, past any st.error: the file says it in one line
            why = html.escape(" ".join(str(e).split())[:300])
            return f"<!doctype html><title>pykv</title><p>The review pack could not be built: {why}".encode()

    st.download_button(
        "Review pack (HTML)",
        page,
        file_name="pykv-your-server.html",
        mime="text/html",
        key="server_pack",
        icon=":material/description:",
        on_click="ignore",
        help="One self-contained page to send: release, timeline, findings, replay and what-if.",
    )


def _what_if_table(outcomes: list[ReplayOutcome]) -> None:
    columns = ["as planned"] + [f"fix {i}" for i in range(1, len(outcomes))]
    rows = [[label] + [fmt.format(getattr(o, field)) for o in outcomes] for label, field, fmt in WHAT_IF_ROWS]
    rows[3][0] = f"output tokens/s ({outcomes[0].target_label})"
    st.dataframe(pd.DataFrame(rows, columns=[""] + columns), hide_index=True, key="server_what_if_table")
    if not all(o.done for o in outcomes):
        st.caption("A run stopped at its step limit before finishing: its figures are of the steps it ran.")


def baseline(d: Diagnosis) -> None:
    st.subheader("Baseline")
    st.caption(
        "Keep this diagnosis as a baseline (JSON: the release, the config seen, the figures) and compare "
        "the next run against it. Nothing is kept on this server after the session."
    )
    st.download_button(
        "Download as a baseline",
        baseline_bytes(baseline_body(d)),
        file_name="pykv-baseline.json",
        mime="application/json",
        key="server_baseline_download",
        icon=":material/download:",
    )
    old = st.file_uploader("Compare with a saved baseline", type=["json"], key="server_baseline_upload")
    if old is None:
        return
    try:
        result = compare(d, parse_baseline(old.getvalue(), "that file"))
    except Exception as e:
        st.error(f"That baseline cannot be used: {error_line(e)}")
        return
    st.info(plain(result.verdict))
    st.dataframe(
        pd.DataFrame(
            [(k, v[0], v[1]) for k, v in result.changes.items()], columns=["figure", "baseline", "now"]
        ).astype(str),
        hide_index=True,
        key="server_baseline_table",
    )
