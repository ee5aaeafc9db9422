"""The Sweep page: one seeded workload run to completion over a range of pool sizes (or block sizes,
or max_num_seqs), once per series (a preemption mode under one vLLM release: v0.6 by default, so that only the mode
changes), each point a chosen number of times, with what each run cost on this device on the wall clock and the
engine thread's CPU clock, charted and downloadable.

Cancel: a click on any widget makes Streamlit stop the running script at its next element call
and rerun it. The run loop files each finished point in the session *before* it moves the progress
bar (the call where that stop lands), so Cancel stops the sweep after the point in progress and the
points done so far stay on the page, marked as stopped. The last sweep lives in
``st.session_state.sweep_run``, so it survives reruns and a visit to another page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import streamlit as st

from pykv.engine.model.attention import resolve_backend
from pykv.engine.model.loader import LoadedModel
from pykv.lab.sweep import StormShape, SweepSpec, band_applies, iter_runs, release_name, storm_shape, sweep_result
from pykv.ui.session import state
from pykv.ui.views.panels import sweep_modelled, sweep_results
from pykv.ui.views.panels.sweep_form import AXIS_NAMES, sweep_form
from pykv.ui.views.widgets import target


@dataclass
class SweepRun:
    """This session's last sweep; ``rows``/``costs`` grow as points finish (changed by ``_run`` only)."""

    spec: SweepSpec
    total: int  # points
    shape: StormShape | None
    rows: list[dict] = field(default_factory=list)
    costs: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None  # why the sweep stopped, where it failed

    @property
    def done(self) -> bool:
        return len(self.rows) == self.total


def _backend_label() -> str:
    cfg = state.default_config()
    try:
        return resolve_backend(cfg.attention_backend, cfg.device).label
    except ValueError:
        return cfg.attention_backend


def render() -> None:
    st.title("Sweep")
    st.caption(
        "One seeded workload run to completion at each setting, once per preemption mode, timed on this machine. "
        "Every mode runs under one vLLM release (by default `v0.6`, vLLM 0.6.3, the release that has both recompute "
        "and swap), so only the mode differs; a series on another release (V1's recompute, say) is an extra, named "
        "with its release. Each point runs a few times: the charts show the median and the spread, on the CPU clock "
        "of the engine thread or the wall clock. Each point is one step of the progress bar; Cancel stops after the "
        f"point in progress. Attention: {_backend_label()} (runs to completion take the fast path; on a CPU the "
        "Playground and the Lessons run the Triton kernels, interpreted, on the model's first layer)."
    )
    target.picker("sw_")  # the modelled target every run's schedule is priced on
    axis = st.segmented_control(
        "Sweep over",
        list(AXIS_NAMES),
        format_func=lambda axis: AXIS_NAMES[axis],
        key="sweep_axis",
        default="num_gpu_blocks",
        required=True,
    )
    spec = sweep_form(axis)
    if spec is not None:
        try:
            loaded = state.shared_model(spec.base.model, spec.base.device, spec.base.dtype)
        except ValueError as e:
            st.error(f"Could not load the model: {e}")
        else:
            shape = storm_shape(spec, loaded) if spec.axis != "block_size" else None
            _run(SweepRun(spec, spec.num_points, shape), loaded)
    _show(st.session_state.get("sweep_run"))


def _run(run: SweepRun, loaded: LoadedModel) -> None:
    st.session_state.sweep_run = run
    cancel = st.empty()
    cancel.button(
        "Cancel",
        key="sweep_cancel",
        icon=":material/stop:",
        help="Stop after the point in progress; the points done so far are kept.",
    )
    repeats = run.spec.repeats
    bar = st.progress(0.0, text=f"0 of {run.total} points ({repeats} run{'s' if repeats > 1 else ''} each)")
    t0 = time.perf_counter()
    try:
        for row, costs in iter_runs(run.spec, loaded):
            run.rows.append(row)
            run.costs.extend(costs)
            run.seconds = time.perf_counter() - t0
            bar.progress(
                len(run.rows) / run.total,
                text=f"{len(run.rows)} of {run.total} points: {row['series']}, {run.spec.axis}={row['value']}: "
                f"{row['cpu_s']:.1f} s CPU, {row['wall_s']:.1f} s wall (median of {repeats})",
            )  # a Cancel stops here
    except (RuntimeError, ValueError) as e:
        run.error = str(e)
    bar.empty()
    cancel.empty()


def _show(run: SweepRun | None) -> None:
    if run is not None and run.error:
        st.error(f"The sweep stopped: {run.error}")
    if run is None or not run.rows:
        st.info(
            "Press **Run sweep**. The default, recompute against swap under vLLM 0.6.3 at 3 pool sizes, each point "
            "3 times on the shipped model, costs about 14 s of CPU time on a 2-core CPU: about that long on a quiet "
            "machine, longer on a busy one (bench_sweep in the manual's Benchmarks)."
        )
        return
    result = sweep_result(run.rows, run.costs, cancelled=not run.done)
    result = sweep_modelled.with_modelled(result, run.rows, run.costs, target.current_estimate())
    sweep_results.render(run.spec, result, run.rows, run.total, run.seconds, run.shape, state.is_dark(), _band_note)


def _band_note(shape: StormShape, spec: SweepSpec) -> str:
    """Where the storm's preemption count follows the pool, under the sweep's release (``StormShape``)."""
    release = release_name(spec.base.profile)
    if not band_applies(spec.base.vllm_profile):
        return (
            f"Storm of {shape.num_requests} requests, each ending with {shape.blocks_per_request} blocks: "
            f"{shape.demand} blocks carry them all. Under {release} recompute's count does not follow the pool: a "
            "victim comes back as soon as its whole sequence fits beside the watermark and collides again, and V0's "
            "append check wants a free block even for a decode into a partly filled one, so a pool that is just "
            "full still preempts. A swapped request returns as soon as its blocks fit, anywhere. Under V1 "
            "(v0.32, v0.33) recompute's count follows the pool exactly inside a band: run the sweep under v0.33."
        )
    band = shape.band
    pool = f"(pool − {shape.null_blocks})" if shape.null_blocks else "pool"
    null = " (vLLM V1 keeps block 0 back as its null block)" if shape.null_blocks else ""
    return (
        f"Storm of {shape.num_requests} requests, each ending with {shape.blocks_per_request} blocks. Under "
        f"{release}, for pools of {band.start}–{band.stop - 1} blocks recompute preempts exactly "
        f"{shape.num_requests} − ⌊{pool} / {shape.blocks_per_request}⌋ times{null}, so a smaller pool never "
        "preempts less. Outside that band, and for swap anywhere, a bigger pool can preempt more: victims re-enter "
        "while others still run (a swapped request returns as soon as its blocks fit) and collide again."
    )
