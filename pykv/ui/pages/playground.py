"""The Playground page: controls, then the live views (``live_views``: metrics strip, block grid,
queues, narration, the run timeline, the tables), then the same run in vLLM's own engine
(``real_vllm_panel``). A click on the timeline shows that step.

All the live views sit in one fragment, so a Step (or a Play tick) redraws them without rerunning
the sidebar. Every figure comes from ``pykv.viz`` and is drawn with ``theme=None`` and a stable key.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from pykv.lab.lab import Lab, admitted, has_preempted, steps_waited
from pykv.ui.session import budgets, state
from pykv.ui.session.flash import flash, show
from pykv.ui.views.panels import (
    exercise_panel,
    kernel_view,
    real_vllm_panel,
    replay_banner,
    review_pack_button,
    sidebar,
)
from pykv.ui.views.players import follower, live_views
from pykv.ui.views.widgets.style import PAGE_CSS

SPEEDS = {"slow": 1.0, "normal": 0.5, "fast": 0.2}  # seconds between Play ticks


def render() -> None:
    st.html(PAGE_CSS)
    exercise_panel.render()  # "Your turn" when the URL carries exercise=LESSON.STEP (may build the Lab)
    lab = state.get_lab()
    if lab is None:
        return
    sidebar.render(lab)
    follower.exploring_banner(lab)
    replay_banner.render(lab)  # a server replay: what it is, and the way back to its diagnosis
    st.session_state.setdefault("playing", False)
    st.session_state.setdefault("speed", "normal")
    every = SPEEDS.get(st.session_state.speed, 0.5) if st.session_state.playing else None

    @st.fragment(run_every=every)
    def live() -> None:
        _live(st.session_state.lab)

    live()


# ---- control callbacks (run before the fragment reruns) ------------------------------------


def _act(fn, *args) -> None:
    st.session_state.acted = True
    try:
        fn(*args)
    except ValueError as e:  # an engine message, never a traceback
        flash(str(e))
    except Exception as e:  # an engine failure (e.g. a kernel): a message; the recorded steps stay viewable
        flash(f"The engine failed: {type(e).__name__}: {e}")


def _set_playing(playing: bool) -> None:
    """Play and Pause are two buttons, each idempotent: a click that lands on a stale button (a timer run
    re-rendering under the pointer) can never toggle the state back (a toggle could)."""
    st.session_state.acted = True
    st.session_state.playing = playing
    st.session_state.replan = True  # run_every changes: the whole page reruns


def _next_preemption(lab: Lab) -> None:
    note = budgets.run_action(lab, "Next preemption", lab.run_to_next_preemption, budgets.NEXT_PREEMPTION_BUDGET_S)
    if note:
        flash(note, "warning")
    elif not has_preempted(lab.view):
        flash("No further preemption: the run reached its end.", "info")


def _next_admission(lab: Lab) -> None:
    note = budgets.run_action(lab, "Next admission", lab.run_to_next_admission, budgets.NEXT_PREEMPTION_BUDGET_S)
    if note:
        flash(note, "warning")
        return
    ids = admitted(lab.previous, lab.view)
    if not ids:
        flash("No further admission: the run reached its end.", "info")
        return
    waits = ", ".join(f"req {rid} (waited {steps_waited(lab.snapshots, rid, lab.cursor)} steps)" for rid in ids)
    flash(f"Step {lab.cursor} admitted {waits}.", "info")


def _run_to_end(lab: Lab) -> None:
    note = budgets.run_action(lab, "Run to end", lab.run_to_end, budgets.RUN_TO_END_BUDGET_S)
    if note:
        flash(note, "warning")


def _goto_clicked(lab: Lab) -> None:
    """Show the step clicked on the timeline; the click counts as an action (no Play tick this rerun)."""
    step = live_views.clicked_step(lab)
    if step is None:
        return
    st.session_state.acted = True
    # A recorded step: goto only moves the cursor. The budget guards it all the same, as for a link.
    lab.goto(step, time_budget_s=budgets.DEEP_LINK_BUDGET_S, should_stop=budgets.session_gone())


def _live(lab: Lab) -> None:
    _goto_clicked(lab)  # first, so the controls, the URL and the views all show the step clicked
    acted = st.session_state.pop("acted", False)
    if st.session_state.get("playing") and not acted:
        try:
            moved = lab.step()  # a Play tick; stop at the end
        except Exception as e:  # an engine failure: stop playing and say so
            moved = False
            flash(f"The engine failed: {type(e).__name__}: {e}")
        if not moved:
            st.session_state.playing = False
            st.session_state.replan = True
    if st.session_state.pop("replan", False):
        st.rerun()  # whole app: re-create the fragment with the new run_every

    _controls(lab)
    show("page")
    state.sync_url(lab)

    # While playing, the timeline takes no clicks: a selectable chart that changes on every tick makes the browser
    # send reruns of its own, which swallowed the Pause click (the e2e Play/Pause test caught it).
    live_views.render(lab, timeline_select=not st.session_state.playing)
    real_vllm_panel.render(lab)  # the same knobs and workload in vLLM's own engine, at this step
    kernel_view.expander(lab)


def _controls(lab: Lab) -> None:
    end = lab.at_end()
    where = f"**Step {lab.cursor}**"
    if lab.cursor < lab.head:
        where += f" · history (the engine is at step {lab.head}; Step replays it)"
    elif end:
        where += " · every request has finished"
    p = lab.config.profile
    # a workload from a file, a lesson or a server replay has no preset: its own name says what runs
    source = f"preset `{lab.preset}`" if lab.preset else "no workload"
    if not lab.preset and lab.workload is not None:
        source = f"workload `{lab.workload.name}`"
    st.markdown(
        f"{where} · {source} · {lab.engine.backend.label} attention on "
        f"`{lab.config.device}` · {lab.config.num_gpu_blocks} blocks × {lab.config.block_size} tokens · "
        f"follows vLLM {p.release} ({p.engine})",
        help=f"vllm_profile={p.name}: {p.summary}. " + " ".join(lab.engine.startup_lines),
    )
    playing = st.session_state.playing
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="controls"):
        st.button(
            "Step",
            key="step",
            shortcut="Right",
            type="primary",
            on_click=_act,
            args=(lab.step,),
            disabled=end,
            help="One engine step (keyboard →).",
        )
        st.button(
            "Back",
            key="back",
            shortcut="Left",
            on_click=_act,
            args=(lab.back,),
            disabled=lab.cursor == 0,
            help="Show the previous step (keyboard ←).",
        )
        if playing:
            st.button(
                "Pause",
                key="pause",
                icon=":material/pause:",
                on_click=_set_playing,
                args=(False,),
                help="Stop the timer.",
            )
        else:
            st.button(
                "Play",
                key="play",
                icon=":material/play_arrow:",
                on_click=_set_playing,
                args=(True,),
                disabled=end,
                help="Step on a timer.",
            )
        st.segmented_control(
            "Speed",
            list(SPEEDS),
            key="speed",
            label_visibility="collapsed",
            required=True,
            on_change=lambda: st.session_state.update(replan=True, acted=True),
            help="Play speed: a step every 1 s, 0.5 s or 0.2 s.",
        )
        st.button(
            "Next preemption",
            key="next_preemption",
            icon=":material/fast_forward:",
            on_click=_act,
            args=(_next_preemption, lab),
            disabled=end,
            help="Step until a step preempts a request.",
        )
        st.button(
            "Next admission",
            key="next_admission",
            icon=":material/login:",
            on_click=_act,
            args=(_next_admission, lab),
            disabled=end,
            help="Step until a waiting request is admitted: past a stall, where the narration says why the head "
            "of the waiting queue waits.",
        )
        st.button(
            "Run to end",
            key="run_end",
            on_click=_act,
            args=(_run_to_end, lab),
            disabled=end,
            help="Step until every request has finished.",
        )
        st.button(
            "Reset",
            key="reset",
            on_click=_act,
            args=(lab.reset,),
            help="Back to step 0 (requests added by hand are dropped).",
        )
        with st.popover("Add request", icon=":material/add:"):
            with st.form("add_request", border=False):
                prompt = st.text_area("prompt", "def fibonacci(n):", key="new_prompt")
                max_tokens = st.number_input("max_tokens", 1, 4096, 32, key="new_max_tokens")
                n_col, priority_col = st.columns(2)
                n = n_col.number_input(
                    "n (sequences)",
                    1,
                    16,
                    1,
                    key="new_n",
                    help="Parallel sampling: the first token forks n - 1 sequences sharing the "
                    "prompt's blocks (copy on write on the last, partial one).",
                )
                priority = priority_col.number_input(
                    "priority",
                    -1000,
                    1000,
                    0,
                    key="new_priority",
                    help="vLLM's: lower runs first; read by preemption_victim=priority.",
                )
                if st.form_submit_button("Queue it at this step"):
                    st.session_state.acted = True
                    try:
                        rid = lab.add_request(prompt, int(max_tokens), n=int(n), priority=int(priority))
                        flash(f"Queued req {rid} at step {lab.cursor}.", "info")
                        st.rerun()  # the controls above were drawn before it was queued (Step was off at the end)
                    except ValueError as e:
                        flash(str(e))
        review_pack_button.review_pack_controls(
            partial(review_pack_button.playground_pack, lab),
            f"pykv_review_step{lab.head}",
            "playground",
            "this run, every step so far",
        )
