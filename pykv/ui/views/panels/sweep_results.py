"""The Sweep page's results: what the sweep compared (its series, each named with its release), the clock its charts
show (the engine thread's CPU time or wall time; the CSVs have both), the measured charts with each point's median
and spread and the machine's load, the modelled ones beside them, the table, the CSVs and the review pack."""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from pykv.border.csv_safe import csv_text
from pykv.border.timing_measures import DEFAULT_MEASURE, MEASURE_NOTES, MEASURES, NOISY_SPREAD, is_noisy, twin
from pykv.lab.sweep import StormShape, SweepResult, SweepSpec
from pykv.ui.views.panels import review_pack_button, sweep_modelled
from pykv.ui.views.widgets.export_buttons import export_controls
from pykv.ui.views.widgets.fitted_chart import fitted
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz import block_size_cost_figure, preemption_cost_figure, runs_figure
from pykv.viz.captions import sweep_caption, sweep_command, sweep_costs_note
from pykv.viz.tax_chart import recompute_tax_figure

TABLE_COLUMNS = [  # the table on the page: counts, each time on both clocks (medians), the modelled figures beside
    "series",
    "value",
    "preemptions",
    "recomputed_tokens",
    "swapped_bytes",
    "swap_copies",
    "cpu_s",
    "wall_s",
    "tokens_per_cpu_s",
    "tokens_per_s",
    "recompute_cpu_s",
    "recompute_s",
    "swap_cpu_s",
    "swap_s",
    "modelled_pcie_gen5_s",
    "modelled_target",
    "modelled_s",
    "modelled_tokens_per_s",
    "repeats",
    "load_1m",
]  # the CSV has every column, each time's fastest and slowest repeat too


def load_text(runs: pd.DataFrame) -> str | None:
    loads = runs["load_1m"].dropna() if "load_1m" in runs else pd.Series(dtype=float)
    if loads.empty:
        return None
    lo, hi = f"{loads.min():.2f}", f"{loads.max():.2f}"
    return lo + (f"–{hi}" if hi != lo else "")


def noisy_points(runs: pd.DataFrame, measure: str) -> list[str]:
    """The points whose end-to-end time on ``measure``'s clock spread over NOISY_SPREAD of its median."""
    name = twin("wall_s", measure)
    return [
        f"{r['series']} at {r['value']}"
        for _, r in runs.iterrows()
        if is_noisy(r.get(f"{name}_lo"), r.get(f"{name}_hi"), r.get(name))
    ]


def comparison_note(spec: SweepSpec) -> str:
    base = spec.base.vllm_profile
    names = "; ".join(p.label for p in spec.configs()[: len(spec.series) * len(spec.policies)])
    if len(spec.profiles) == 1:
        return f"Compared: {names}. One release, {base}: only the mode differs."
    return (
        f"Compared across releases: {names}. Lines on different releases differ in more than the mode (admission, "
        "watermark, V1's null block): read them as releases, not as modes."
    )


def measure_picker() -> str:
    """Which clock the charts show (a redraw, not a rerun of the sweep)."""
    return st.segmented_control(
        "Times shown",
        list(MEASURES),
        format_func=lambda m: MEASURES[m],
        key="sweep_measure",
        default=DEFAULT_MEASURE,
        required=True,
        help="; ".join(f"{MEASURES[m]}: {MEASURE_NOTES[m]}" for m in MEASURES)
        + ". The CSVs have both, each with its fastest and slowest repeat.",
    )


def render(
    spec: SweepSpec,
    result: SweepResult,
    rows: list[dict],
    total: int,
    seconds: float,
    shape: StormShape | None,
    dark: bool,
    band_note,
) -> None:
    runs, device = result.runs, result.runs["device"].iloc[0]
    load = load_text(runs)
    status = (
        f"{len(runs)} of {total} points ({spec.repeats} run{'s' if spec.repeats > 1 else ''} each) in {seconds:.1f} s "
        f"on `{device}`, model `{spec.base.model}`" + (f"; load average {load} (1 min) while it ran." if load else ".")
    )
    (st.warning if result.cancelled else st.success)(("Stopped: " if result.cancelled else "") + status)
    st.caption(comparison_note(spec))
    measure = measure_picker()
    st.caption(f"Times: {MEASURE_NOTES[measure]}. Counts are the same every repeat.")
    noisy = noisy_points(runs, measure)
    if noisy:
        st.warning(
            f"{len(noisy)} point(s) spread over {NOISY_SPREAD:.0%} of their median ({', '.join(noisy[:4])}"
            f"{', ...' if len(noisy) > 4 else ''}): the machine was busy"
            + (f" (load {load})" if load else "")
            + ". Read their medians with care, or run more repeats.",
            icon=":material/warning:",
        )
    capacity = None
    if shape is not None and spec.axis == "max_num_seqs":
        capacity = shape.carried(spec.base.num_gpu_blocks)
    export = _exporter(spec, device, len(runs), total, measure, load)
    draw_runs = partial(runs_figure, runs, capacity=capacity, measure=measure)
    st.plotly_chart(fitted(draw_runs(dark=dark)), theme=None, key="sweep_runs", config=PLOT_CONFIG)
    export(draw_runs, "runs", "sweep_runs")
    if shape is not None and spec.axis == "num_gpu_blocks" and spec.base.max_num_seqs >= shape.num_requests:
        st.caption(band_note(shape, spec))
    if spec.axis == "block_size":
        draw_block_size = partial(block_size_cost_figure, result.preemptions, measure=measure)
        st.plotly_chart(fitted(draw_block_size(dark=dark)), theme=None, key="sweep_block_size", config=PLOT_CONFIG)
        export(draw_block_size, "block_size_cost", "sweep_block_size")
    draw_tax = partial(recompute_tax_figure, runs)
    st.plotly_chart(fitted(draw_tax(dark=dark)), theme=None, key="sweep_tax", config=PLOT_CONFIG)
    export(draw_tax, "recompute_tax", "sweep_tax")
    draw_costs = partial(preemption_cost_figure, result.preemptions, measure=measure)
    st.plotly_chart(fitted(draw_costs(dark=dark)), theme=None, key="sweep_costs", config=PLOT_CONFIG)
    export(draw_costs, "preemption_cost", "sweep_costs")
    sweep_modelled.render(runs, spec.base.block_size, export, dark, capacity, measure)
    st.caption(sweep_costs_note(spec.base, device))
    st.dataframe(runs[[c for c in TABLE_COLUMNS if c in runs]], hide_index=True, key="sweep_table", width="stretch")
    _downloads(spec, result, total, seconds, capacity, measure)


def _downloads(spec, result, total, seconds, capacity, measure) -> None:
    c1, c2 = st.columns(2)
    c1.download_button(
        "Runs (CSV)",
        csv_text(result.runs),
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
        partial(review_pack_button.sweep_pack_maker, spec, result, total, seconds, capacity, measure),
        f"pykv_review_sweep_{spec.axis}",
        "sweep",
        "this sweep",
    )


def _exporter(spec: SweepSpec, device: str, done: int, total: int, measure: str, load: str | None):
    """``export(draw, name, key)``: a chart's Export control; its link is the command that reruns the sweep."""
    what: dict[str, Any] = dict(  # the sweep's own fields, said the same in the caption and the command
        workload=spec.workload,
        workload_args=spec.workload_args,
        axis=spec.axis,
        values=spec.values,
        policies=spec.policies,
    )
    labels = [p.label for p in spec.configs()[: len(spec.series) * len(spec.policies)]]
    caption = sweep_caption(
        spec.base,
        device,
        runs=done,
        total=total,
        series=labels,
        repeats=spec.repeats,
        measure=measure,
        load=load,
        **what,
    )
    command = sweep_command(
        spec.base,
        seed=spec.seed,
        modes=spec.modes,
        repeats=spec.repeats,
        across_releases=spec.across_releases,
        **what,
    )

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
