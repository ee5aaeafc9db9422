"""The Sweep page: one seeded workload run to completion over a range of pool sizes (or block sizes,
or max_num_seqs), once per mode, with what each run cost on this device, charted and downloadable.

Cancel: a click on any widget makes Streamlit stop the running script at its next element call
and rerun it. The run loop files each finished run in the session *before* it moves the progress
bar (the call where that stop lands), so Cancel stops the sweep after the run in progress and the
runs done so far stay on the page, marked as stopped. The last sweep lives in
``st.session_state.sweep_run``, so it survives reruns and a visit to another page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import streamlit as st

from pykv.border.config import EngineConfig
from pykv.border.csv_safe import csv_text
from pykv.border.preemption_choices import POLICY_LABELS
from pykv.border.workload import PRESETS
from pykv.engine.model.attention import resolve_backend
from pykv.engine.model.loader import LoadedModel
from pykv.lab.sweep import (
    MODES,
    StormShape,
    SweepSpec,
    count_values,
    iter_runs,
    parse_values,
    storm_shape,
    sweep_result,
)
from pykv.ui.session import state
from pykv.ui.views.panels import review_pack_button, sweep_modelled
from pykv.ui.views.widgets import target
from pykv.ui.views.widgets.export_buttons import export_controls
from pykv.viz import block_size_cost_figure, preemption_cost_figure, runs_figure
from pykv.viz.captions import sweep_caption, sweep_command, sweep_costs_note
from pykv.viz.tax_chart import recompute_tax_figure

AXIS_NAMES = {"num_gpu_blocks": "pool size (blocks)", "block_size": "block size", "max_num_seqs": "max_num_seqs"}
MAX_RUNS = 60  # a sweep past this is a typo more often than a plan
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


@dataclass(frozen=True)
class FormDefaults:
    values: str
    n: int
    max_tokens: int
    modes: tuple[str, ...]
    num_gpu_blocks: int
    max_num_seqs: int = 8
    block_size: int = 16


_CANON = SweepSpec()  # the pool-size default is the canonical storm sweep (6 pools x recompute, swap)
DEFAULTS = {
    "num_gpu_blocks": FormDefaults(
        ",".join(map(str, _CANON.values)),
        _CANON.workload_args["n"],
        _CANON.workload_args["max_tokens"],
        _CANON.modes,
        _CANON.base.num_gpu_blocks,
    ),
    "block_size": FormDefaults("4,8,16,32", 8, 96, ("recompute", "swap", "swap per-block"), 32),
    # 16 requests on a pool that carries 6 of them to the end (shipped model): the preemption storm
    "max_num_seqs": FormDefaults("2,4,6,8,12,16", 16, 96, ("recompute", "swap"), 48, max_num_seqs=16),
}


@dataclass
class SweepRun:
    """This session's last sweep; ``rows``/``costs`` grow as runs finish (changed by ``_run`` only)."""

    spec: SweepSpec
    total: int
    shape: StormShape | None
    rows: list[dict] = field(default_factory=list)
    costs: list[dict] = field(default_factory=list)
    seconds: float = 0.0

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
        "One seeded workload run to completion at each setting, once per preemption mode, timed on this "
        "machine. Recompute modes follow today's vLLM (`vllm_profile=v0.33`); swap modes follow vLLM 0.6 "
        "(`v0.6`), the last release that swapped: the CSV's `vllm_profile` column says which. Each run is one "
        "step of the progress bar; Cancel stops after the run in progress. Attention: "
        f"{_backend_label()} (runs to completion take the fast path; on a CPU the Playground and the Lessons "
        "run the Triton kernels, interpreted, on the model's first layer)."
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
    spec = _form(axis)
    if spec is not None:
        try:
            loaded = state.shared_model(spec.base.model, spec.base.device, spec.base.dtype)
        except ValueError as e:
            st.error(f"Could not load the model: {e}")
        else:
            shape = storm_shape(spec, loaded) if spec.axis != "block_size" else None
            _run(SweepRun(spec, len(spec.configs()), shape), loaded)
    _show(st.session_state.get("sweep_run"))


def _form(axis: str) -> SweepSpec | None:
    """The sweep form for ``axis`` (each axis keeps its own inputs); the spec on submit, else None."""
    d = DEFAULTS[axis]
    with st.form(f"sweep_form_{axis}"):
        c1, c2, c3 = st.columns(3)
        preset = c1.selectbox("Workload", list(PRESETS), index=list(PRESETS).index("storm"), key=f"sw_preset_{axis}")
        n = c2.number_input("requests", 1, 256, d.n, key=f"sw_n_{axis}")
        max_tokens = c3.number_input("max_tokens each", 1, 1024, d.max_tokens, key=f"sw_max_tokens_{axis}")
        values = st.text_input(
            f"{AXIS_NAMES[axis]} values",
            d.values,
            key=f"sw_values_{axis}",
            help="start:stop:step (stop included), e.g. 16:128:16, or a list: 16,32,64",
        )
        fixed = {}
        cols = iter(st.columns(2))
        for name, label, default in (
            ("num_gpu_blocks", "pool size (blocks)", d.num_gpu_blocks),
            ("block_size", "block size (tokens)", d.block_size),
            ("max_num_seqs", "max_num_seqs", d.max_num_seqs),
        ):
            if name != axis:
                fixed[name] = next(cols).number_input(label, 1, 4096, default, key=f"sw_{name}_{axis}")
        if axis == "block_size":
            st.caption("Each block size keeps the pool's capacity in tokens (pool size x 16).")
        modes = st.multiselect(
            "Modes",
            list(MODES),
            list(d.modes),
            key=f"sw_modes_{axis}",
            help="+prefix: with prefix caching; +offload: V1's CPU offloading tier (vLLM "
            "0.11.1+), which stores full prompt blocks only; "
            "per-block: one copy per block, layer and K/V",
        )
        policies = st.multiselect(
            "Victim policies",
            list(POLICY_LABELS),
            ["last"],
            key=f"sw_policies_{axis}",
            help="; ".join(f"{k}: {v}" for k, v in POLICY_LABELS.items()),
        )
        if not st.form_submit_button("Run sweep", type="primary"):
            return None
    try:
        runs = count_values(values) * len(modes) * max(1, len(policies))  # counted, not listed: 1:300000:1 is free
        if runs > MAX_RUNS:
            raise ValueError(
                f"That is {runs} runs; the page runs at most {MAX_RUNS}. Use fewer values or modes "
                "(or the command line: python -m pykv sweep)."
            )
        base = EngineConfig(model=state.model_name(), **({"block_size": 16} | fixed))
        spec = SweepSpec(
            workload=preset,
            workload_args={"n": int(n), "max_tokens": int(max_tokens)},
            axis=axis,
            values=parse_values(values),
            modes=tuple(modes),
            base=base,
            policies=tuple(policies),
        )
        spec.configs()  # validates every run's config up front
        return spec
    except ValueError as e:
        st.error(str(e))
        return None


def _run(run: SweepRun, loaded: LoadedModel) -> None:
    st.session_state.sweep_run = run
    cancel = st.empty()
    cancel.button(
        "Cancel",
        key="sweep_cancel",
        icon=":material/stop:",
        help="Stop after the run in progress; the runs done so far are kept.",
    )
    bar = st.progress(0.0, text=f"0 of {run.total} runs")
    t0 = time.perf_counter()
    for row, costs in iter_runs(run.spec, loaded):
        run.rows.append(row)
        run.costs.extend(costs)
        run.seconds = time.perf_counter() - t0
        bar.progress(
            len(run.rows) / run.total,
            text=f"{len(run.rows)} of {run.total} runs: {row['mode']}, "
            f"{run.spec.axis}={row['value']} took {row['wall_s']:.1f} s",
        )  # a Cancel stops here
    bar.empty()
    cancel.empty()


def _show(run: SweepRun | None) -> None:
    if run is None or not run.rows:
        st.info(
            "Press **Run sweep**. The default, 6 pool sizes by recompute and swap on the shipped model, takes "
            "about 11 s on a 2-core CPU."
        )
        return
    result = sweep_result(run.rows, run.costs, cancelled=not run.done)
    result = sweep_modelled.with_modelled(result, run.rows, run.costs, target.current_estimate())
    spec, runs, device = run.spec, result.runs, result.runs["device"].iloc[0]
    status = f"{len(runs)} of {run.total} runs in {run.seconds:.1f} s on `{device}`, model `{spec.base.model}`."
    (st.warning if result.cancelled else st.success)(("Stopped: " if result.cancelled else "") + status)
    dark = state.is_dark()
    capacity = None
    if run.shape is not None and spec.axis == "max_num_seqs":
        capacity = run.shape.carried(spec.base.num_gpu_blocks)
    export = _exporter(run, device)
    draw_runs = partial(runs_figure, runs, capacity=capacity)
    st.plotly_chart(draw_runs(dark=dark), theme=None, key="sweep_runs", config=PLOT_CONFIG)
    export(draw_runs, "runs", "sweep_runs")
    if run.shape is not None and spec.axis == "num_gpu_blocks" and spec.base.max_num_seqs >= run.shape.num_requests:
        st.caption(_band_note(run.shape))
    if spec.axis == "block_size":
        draw_block_size = partial(block_size_cost_figure, result.preemptions)
        st.plotly_chart(draw_block_size(dark=dark), theme=None, key="sweep_block_size", config=PLOT_CONFIG)
        export(draw_block_size, "block_size_cost", "sweep_block_size")
    draw_tax = partial(recompute_tax_figure, runs)
    st.plotly_chart(draw_tax(dark=dark), theme=None, key="sweep_tax", config=PLOT_CONFIG)
    export(draw_tax, "recompute_tax", "sweep_tax")
    draw_costs = partial(preemption_cost_figure, result.preemptions)
    st.plotly_chart(draw_costs(dark=dark), theme=None, key="sweep_costs", config=PLOT_CONFIG)
    export(draw_costs, "preemption_cost", "sweep_costs")
    sweep_modelled.render(runs, spec.base.block_size, export, dark, capacity)
    st.caption(sweep_costs_note(spec.base, device))
    st.dataframe(runs, hide_index=True, key="sweep_table", width="stretch")
    c1, c2 = st.columns(2)
    c1.download_button(
        "Runs (CSV)",
        csv_text(runs),
        "sweep_runs.csv",
        "text/csv",
        key="sweep_csv",
        icon=":material/download:",
    )
    c2.download_button(
        "Preemptions (CSV)",
        csv_text(result.preemptions),
        "sweep_preemptions.csv",
        "text/csv",
        key="sweep_preemptions_csv",
        icon=":material/download:",
    )
    review_pack_button.review_pack_controls(
        partial(review_pack_button.sweep_pack_maker, spec, result, run.total, run.seconds, capacity),
        f"pykv_review_sweep_{spec.axis}",
        "sweep",
        "this sweep",
    )


def _exporter(run: SweepRun, device: str):
    """``export(draw, name, key)``: a chart's Export control; its link is the command that reruns the sweep."""
    spec = run.spec
    what: dict[str, Any] = dict(  # the sweep's own fields, said the same in the caption and the command
        workload=spec.workload,
        workload_args=spec.workload_args,
        axis=spec.axis,
        values=spec.values,
        modes=spec.modes,
        policies=spec.policies,
    )
    caption = sweep_caption(spec.base, device, runs=len(run.rows), total=run.total, **what)
    command = sweep_command(spec.base, seed=spec.seed, **what)

    def export(draw, name: str, key: str) -> None:
        export_controls(
            partial(draw, dark=False),
            f"pykv_sweep_{spec.axis}_{name}",
            caption,
            command,
            key,
            width=1100,
            link_label="reproduce",
        )

    return export


def _band_note(shape: StormShape) -> str:
    band = shape.band
    pool = f"(pool − {shape.null_blocks})" if shape.null_blocks else "pool"
    null = " (vLLM V1 keeps block 0 back as its null block)" if shape.null_blocks else ""
    return (
        f"Storm of {shape.num_requests} requests, each ending with {shape.blocks_per_request} blocks. For pools of "
        f"{band.start}–{band.stop - 1} blocks recompute preempts exactly {shape.num_requests} − ⌊{pool} / "
        f"{shape.blocks_per_request}⌋ times{null}, so a smaller pool never preempts less. Outside that band, and "
        "for swap anywhere, a bigger pool can preempt more: victims re-enter while others still run (a swapped "
        "request returns as soon as its blocks fit) and collide again."
    )
