"""A real server's pressure in the lab: the replay plan (what the scaling keeps and what it cannot), its link (the
workload travels in it), opening it in the Playground at its first preemption, and the review pack."""

from __future__ import annotations

import html
from urllib.parse import parse_qsl

import streamlit as st

from pykv.bridge import Diagnosis
from pykv.lab.replay_spec import encode
from pykv.lab.server_replay import ReplayPlan, plan_replay
from pykv.lab.what_if import suggested_fixes
from pykv.review_pack.deep_link import replay_query
from pykv.review_pack.page import render_html
from pykv.review_pack.server import server_pack
from pykv.ui.safe_text import plain
from pykv.ui.session import lab_address, replay_link, routes, state
from pykv.ui.views.panels import server_what_if
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
    _share(plan)
    if st.button(
        "Open it in the Playground at the first preemption",
        key="server_open_playground",
        icon=":material/play_arrow:",
        type="primary",
    ):
        _open_in_playground(plan)
    return plan


def _open_in_playground(plan: ReplayPlan) -> None:
    # the config exactly as its link gives it in any session (the app's model and defaults, the link's knobs)
    link = replay_query(plan.config, encode(plan.spec), 0) if plan.spec is not None else ""
    config, problems = state.config_from_query(dict(parse_qsl(link.removeprefix("?"))), state.default_config())
    if problems:  # a knob past the app's limits: the link would not replay this run
        st.error(" ".join(problems))  # already plain text with its values in code spans
        return
    try:
        lab = state.make_lab(config, None, plan.workload.seed, plan.workload)
    except ValueError as e:  # ServerFull, ModelError, the engine's refusal: one line
        st.error(plain(e))
        return
    with st.spinner("Running the replay to its first preemption…"):
        lab.run_to_next_preemption(time_budget_s=30.0)
    old = st.session_state.get("lab")
    if old is not None:
        old.release()
    st.session_state.lab = lab
    replay_link.remember(plan)  # the Playground's address bar carries the workload: its link opens the same run
    st.switch_page(routes.page("playground"))


def _share(plan: ReplayPlan) -> None:
    """The replay's own link: config and workload in the address, so it opens the same run in any browser."""
    if plan.spec is None:
        return
    link, label = lab_address.app_link(replay_query(plan.config, encode(plan.spec), 0))
    st.caption(
        f"The replay's {label}, for the incident channel: it carries the config and the {len(plan.workload.requests)} "
        "requests themselves, so it opens this same run at step 0 in any browser. Once opened, the Playground's "
        "address bar carries the step you are at."
    )
    st.code(link, language=None, wrap_lines=True)


def pack_button(d: Diagnosis, plan: ReplayPlan) -> None:
    """The review pack of this diagnosis (with the what-if once it ran): one offline HTML page."""
    fixes = suggested_fixes(d, plan)
    outcomes = server_what_if.what_if_outcomes(fixes)
    est = target.current_estimate()  # read here: the download's callable runs on a thread without the session

    def page() -> bytes:
        try:
            return render_html(server_pack(d, plan, fixes if outcomes else [], outcomes, est))
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
