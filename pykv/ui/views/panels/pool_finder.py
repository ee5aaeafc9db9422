"""The sidebar's "Find the smallest pool": the smallest ``num_gpu_blocks`` at which this session's run has no
preemption, bisected over real runs of the engine (``pykv.lab.smallest_pool``), one probe at a time within the
session's engine allowance, with a progress bar; then one button applies the answer.

A learner asked for lesson 2's minimum (81 blocks) paid an Apply and a Run to end per guess; this asks about
log2(pool) runs of the engine, each shown with what it found, and the answer's neighbour below is one of them.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from pykv.lab.lab import Lab
from pykv.lab.smallest_pool import PoolSearch, Probe, run_probe
from pykv.ui import safe_text
from pykv.ui.session import budgets

SEARCH = "pool_search"  # session_state: the PoolSearch of this session's run (kept across Applies of its answer)
PROBE_BUDGET_S = budgets.RUN_TO_END_BUDGET_S  # one probe is at most one Run to end


def render(lab: Lab, apply: Callable[[Lab, dict, str], None], max_blocks: int) -> None:
    search: PoolSearch | None = st.session_state.get(SEARCH)
    if search is not None and not search.same_run(lab):
        search = None  # another run (a knob, the workload): what it found says nothing about this one
    with st.expander("Find the smallest pool", icon=":material/search:", expanded=search is not None):
        st.caption(
            "The smallest num_gpu_blocks at which this engine's run (its applied knobs, its workload) has no "
            "preemption, by "
            "bisection: each probe runs the engine on it, to its end or to its first preemption (plain torch "
            "attention: the same schedule). It assumes a bigger pool never preempts more, and shows every probe."
        )
        going_on = search is not None and search.next_blocks() is not None and bool(search.probes)
        slot = st.empty()  # the button, gone once the answer is known
        if (search is None or search.next_blocks() is not None) and slot.button(
            "Go on" if going_on else "Find it",
            key="pool_search_go",
            icon=":material/manage_search:",  # not play_arrow: "Play" would name two buttons
            width="stretch",
            help="Runs the engine once per probe, within this session's engine-time allowance.",
        ):
            search = search or PoolSearch.of(lab, max_blocks)
            st.session_state[SEARCH] = search
            _run(search, lab)
            if search.next_blocks() is None:
                slot.empty()
        if search is not None:
            _result(search, lab, apply)


def _run(search: PoolSearch, lab: Lab) -> None:
    """Probe until the answer is known, the allowance is spent or a probe runs out of time; a progress bar."""
    shown = st.empty()  # the progress bar, gone when the search ends
    bar = shown.progress(0.0, text="Starting…")
    while (blocks := search.next_blocks()) is not None:
        with budgets.charged() as budget:
            left = budget.remaining()
            if left <= 0:
                st.warning(
                    f"Stopped: this session used its {budgets.SESSION_COMPUTE_S:g} s of engine time for the last "
                    f"{budgets.SESSION_WINDOW_S / 60:g} minutes. Press Go on in a few minutes."
                )
                break
            done, total = len(search.probes), len(search.probes) + search.probes_left()

            def at_step(step: int, done: int = done, total: int = total, blocks: int = blocks) -> None:
                if step % 16 == 0:
                    text = f"Probe {done + 1} of about {total}: {blocks} blocks, step {step}"
                    bar.progress(min(done / total, 1.0), text=text)

            at_step(0)
            assert lab.loaded is not None  # set once the Lab is built
            probe = run_probe(search, blocks, lab.loaded, min(PROBE_BUDGET_S, left), budgets.session_gone(), at_step)
        if probe is None:
            st.warning(f"Stopped: the probe at {blocks} blocks ran out of time. Press Go on to run it again.")
            break
        search.record(probe)
    if search.next_blocks() is None:
        shown.empty()


def _result(search: PoolSearch, lab: Lab, apply: Callable[[Lab, dict, str], None]) -> None:
    answer = search.answer
    if answer is not None:
        below = next((p for p in search.probes if p.blocks == answer - 1), None)
        st.success(
            f"Smallest pool with no preemption: **{answer} blocks**"
            + (f" ({answer - 1} blocks: {safe_text.plain(below.what)})." if below else " (the smallest pool there is).")
        )
        if lab.config.num_gpu_blocks != answer and st.button(
            f"Apply {answer} blocks",
            key="pool_search_apply",
            type="primary",
            width="stretch",
            help="Rebuilds the engine with this pool at step 0: Run to end shows the run with no preemption.",
        ):
            apply(lab, {"num_gpu_blocks": answer}, lab.preset or "none")
    elif search.none_clean:
        st.warning(f"Even {search.max_blocks} blocks, the app's largest pool, preempt on this run.")
    st.markdown("\n".join(_line(p) for p in sorted(search.probes, key=lambda p: p.blocks)))


def _line(probe: Probe) -> str:
    mark = ":green[✓]" if probe.clean else ":red[✗]"
    return f"- {mark} {probe.blocks} blocks: {safe_text.plain(probe.what)}"
