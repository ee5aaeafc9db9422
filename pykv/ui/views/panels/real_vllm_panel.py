"""vLLM itself beside pykv: the Playground's knobs and workload run by vLLM's real CPU engine (``pykv.real_vllm``:
its own venv, a worker process, traces cached on disk), shown at the step on screen.

A run is keyed by its case (knobs, token ids, arrivals), so a trace already on disk (an earlier run, another
session's, a deep link to any step) shows at once; otherwise "Run it in vLLM itself" runs the worker with a progress
bar (~25 s: ~10 s of it importing vLLM). At the step on screen: whether pykv and vLLM have agreed on every step so
far (else the first step and what differs), vLLM's block pool (``pykv.viz.real_engine``), its queues and batch, its
stats lines and key metrics, and each request's block table beside pykv's. Where the real engine cannot run the
config: one line why (``case.why_not``) and, where knobs alone stand in the way, a button to the nearest config it
runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import streamlit as st

from pykv.border.config import EngineConfig
from pykv.border.knob_table import knob_text
from pykv.lab.lab import Lab
from pykv.lab.lab_requests import lab_run
from pykv.real_vllm import case as real_case
from pykv.real_vllm import install, runner
from pykv.real_vllm.divergence import first_divergence, token_check
from pykv.real_vllm.trace import RealStep, RealTrace, read_trace
from pykv.ui.safe_text import plain
from pykv.ui.session import state
from pykv.ui.views.panels import sidebar
from pykv.ui.views.widgets.metric_row import metric_row
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.real_engine import real_metrics, real_pool_figure, real_tables_frame

logger = logging.getLogger(__name__)

MEMO = "real_vllm_memo"
RUN_BUDGET_S = 180.0  # one run of the real engine in its worker: ~10 s importing vLLM, ~2 s building, ~4 ms a step
POOL_HEIGHT = 360


@dataclass
class _Memo:
    """What the panel worked out for one Lab and its requests: recomputed only when they change."""

    signature: tuple
    case: dict | None = None
    key: str | None = None  # the case's key in the runner's cache
    reason: str | None = None  # why the real engine cannot run it
    caveat: str | None = None
    runnable: EngineConfig | None = None  # the nearest config it runs, where knobs stand in the way
    trace: RealTrace | None = None
    failed: str | None = None  # the last run's failure, one line
    held: list = field(default_factory=list)  # the objects the signature names by id, kept so ids stay theirs


def _signature(lab: Lab) -> tuple:
    return (id(lab), id(lab.workload), lab.config, tuple(lab.manual))


def _memo(lab: Lab) -> _Memo:
    memo: _Memo | None = st.session_state.get(MEMO)
    signature = _signature(lab)
    if memo is not None and memo.signature == signature:
        return memo
    memo = _Memo(signature, held=[lab, lab.workload])
    st.session_state[MEMO] = memo
    try:
        run = lab_run(lab)
    except ValueError as e:  # the Lab's own engine refused it too: nothing to compare
        memo.reason = f"This run cannot be handed to the real engine: {plain(e)}"
        return memo
    memo.reason = real_case.why_not(run.config, run.requests)
    runnable = real_case.runnable_config(lab.config)
    if runnable is not None and real_case.why_not(runnable, run.requests) is None:  # knobs alone stood in the way
        memo.runnable = runnable
    if memo.reason is None:
        memo.caveat = real_case.caveat(run.config)
        memo.case = real_case.case_for(run.config, run.requests, run.max_model_len)
        memo.key = runner.cache_key([memo.case], detail=True)
    return memo


def _cached_trace(key: str) -> RealTrace | None:
    raw = runner.cached_by_key(key)
    return read_trace(raw[0]) if raw else None


def render(lab: Lab, key: str = "playground") -> None:
    """The panel for the step on screen."""
    with st.container(border=True, key=f"{key}_real_vllm"):
        st.markdown(
            f"**vLLM itself** · the same knobs and workload run by vLLM's own engine ({install.PACKAGE} "
            f"{install.RELEASE}: its scheduler, KV cache manager and model runner, in a worker process)"
        )
        memo = _memo(lab)
        if memo.reason is not None:
            st.info(memo.reason, icon=":material/block:")
            _runnable_button(lab, memo, key)
            return
        if not install.is_installed():
            st.info(install.missing_line(), icon=":material/download:")
            return
        assert memo.case is not None and memo.key is not None  # set with no reason
        if memo.caveat:
            st.warning(memo.caveat, icon=":material/info:")
            _runnable_button(lab, memo, key)
        if memo.trace is None:
            memo.trace = _cached_trace(memo.key)  # another session's run, or this one's before a reload
        if memo.trace is None and not _run_button(lab, memo, key):
            return
        assert memo.trace is not None
        _at_step(lab, memo.trace, key)


def _change_words(old: EngineConfig, new: EngineConfig) -> dict[str, str]:
    return {
        name: knob_text(getattr(new, name))
        for name in type(new).model_fields
        if getattr(old, name) != getattr(new, name)
    }


def _runnable_button(lab: Lab, memo: _Memo, key: str) -> None:
    if memo.runnable is None:
        return
    changes = _change_words(lab.config, memo.runnable)
    words = ", ".join(f"{name} {value}" for name, value in changes.items())
    if st.button(
        f"Use knobs vLLM runs: {words}",
        key=f"{key}_real_vllm_runnable",
        icon=":material/tune:",
        help="Rebuild the engine with these knobs, at step 0 (requests added by hand are dropped); the pool keeps "
        "about the same tokens, so the pressure stays.",
    ):
        fixed = {name: getattr(memo.runnable, name) for name in changes}
        sidebar.apply(lab, fixed, lab.preset or "none")


def _run_button(lab: Lab, memo: _Memo, key: str) -> bool:
    """The button that runs the real engine, and the run when pressed; True once a trace is in ``memo``."""
    if memo.failed:
        st.error(memo.failed)
    st.caption(
        "Runs this whole workload, from step 0 to its end, in vLLM's engine (about 25 s on this machine, ~10 s of it "
        "importing vLLM); the result is kept on disk, so this run and its links show it at once afterwards."
    )
    if not st.button("Run it in vLLM itself", key=f"{key}_real_vllm_run", type="primary", icon=":material/memory:"):
        return False
    assert memo.case is not None
    expected = lab.head if lab.at_end() else None
    bar = st.progress(0.0, text="Starting vLLM's engine in its worker…")

    def said(message: str) -> None:
        bar.progress(runner.progress_share(message, expected), text=f"vLLM: {message}")

    try:
        raw = runner.run_cases(
            [memo.case],
            str(real_case.shipped_model_dir()),
            detail=True,
            progress=said,
            limits=runner.RunLimits(timeout_s=RUN_BUDGET_S),
        )
    except runner.RealEngineUnavailable as e:
        logger.warning("the real engine did not run: %s", e)
        memo.failed = str(e).splitlines()[0]
        bar.empty()
        st.error(memo.failed)
        return False
    bar.empty()
    memo.trace, memo.failed = read_trace(raw[0]), None
    return True


def _at_step(lab: Lab, trace: RealTrace, key: str) -> None:
    k = lab.cursor
    if trace.error:
        logger.warning("the real engine's run stopped: %s", trace.error)
        st.warning(f"vLLM's run stopped at step {len(trace.steps)}: {plain(trace.error.splitlines()[0])}")
    if k == 0:
        st.caption(
            f"vLLM ran this workload in {len(trace.steps)} steps. Step 0: neither engine has run a step yet; "
            "Step (→) to compare them step by step."
        )
        return
    _banner(lab, trace, key)
    if k > len(trace.steps):
        st.info(f"vLLM's run ended at step {len(trace.steps)}; pykv is at step {k}.")
        return
    step = trace.steps[k - 1]
    before = trace.steps[k - 2] if k > 1 else None
    left, right = st.columns([5, 4], gap="medium")
    with left:
        if step.pool is not None:
            fig = real_pool_figure(
                step.pool, before.pool if before else None, dark=state.is_dark(), height=POOL_HEIGHT, width=440
            )
            st.plotly_chart(fig, theme=None, key=f"{key}_real_pool", config=PLOT_CONFIG)
    with right:
        st.markdown(f"**Step {k} in vLLM**")
        st.markdown("\n".join(f"- {line}" for line in _step_lines(step)))
        if step.log:
            st.code("\n".join(step.log), language=None, wrap_lines=True)
            st.caption(
                "vLLM's own stats line, asked for after every step (a server writes one every 10 s; pykv's lab every "
                "10 steps). Its throughputs are per wall-clock second of the worker."
            )
    if step.pool is not None:
        metric_row(real_metrics(step.pool), f"{key}_real_metrics")
        st.dataframe(real_tables_frame(step.pool, lab.view), hide_index=True, key=f"{key}_real_tables", width="stretch")
    timing = f"{sum(trace.step_ms) / max(1, len(trace.step_ms)):.1f} ms a step"
    built = f"built in {trace.build_s:.1f} s, " if trace.build_s is not None else ""
    st.caption(f"{trace.side}: {built}{timing} (measured in its worker, on this machine's CPU).")


def _banner(lab: Lab, trace: RealTrace, key: str) -> None:
    k = lab.cursor
    found = first_divergence(lab.snapshots[: k + 1], trace, pykv_done=lab.at_end())
    tokens = token_check(lab.view, trace)
    if found is None:
        st.success(
            f"pykv and vLLM agree on every step so far (steps 1–{k}: batches, preemptions, queues, free blocks, "
            f"finished requests). {tokens.line()}",
            icon=":material/check_circle:",
        )
        return
    st.warning(f"pykv and vLLM differ from step {found.step}. {plain(found.line())}", icon=":material/call_split:")
    if found.step < k:
        st.button(
            f"Show step {found.step}",
            key=f"{key}_real_vllm_goto",
            on_click=_goto,
            args=(lab, found.step),
            help="The first step at which the two engines differ.",
        )
    if not tokens.agree or tokens.compared:
        st.caption(tokens.line())


def _goto(lab: Lab, step: int) -> None:
    st.session_state.acted = True  # an action: no Play tick this rerun
    lab.goto(step)


def _ids(ids: tuple[str, ...]) -> str:
    return plain(", ".join(ids)) if ids else "none"


def _step_lines(step: RealStep) -> list[str]:
    batch = ", ".join(f"{rid} ({n} token{'' if n == 1 else 's'} from {start})" for rid, start, n in step.scheduled)
    lines = [
        f"scheduled: {plain(batch) if batch else 'nothing'}",
        f"preempted: {_ids(step.preempted)}",
        f"finished: {_ids(step.finished)}",
        f"waiting: {_ids(step.waiting)}",
        f"running: {_ids(step.running)}",
        f"free blocks: {step.free_blocks}",
    ]
    return lines
