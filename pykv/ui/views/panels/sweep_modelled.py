"""The Sweep page's modelled part: every run's real schedule priced on the session's target (columns in
the runs table and CSV, a throughput chart beside the measured one, each preemption's modelled bill),
and the recompute-vs-swap crossover on the target. Priced when shown, so a new target needs no rerun."""

from __future__ import annotations

import dataclasses
from functools import partial

import streamlit as st

from pykv.border.timing_measures import DEFAULT_MEASURE
from pykv.gpu_model import Estimate
from pykv.gpu_model.crossover import crossover_curves
from pykv.lab.sweep import SweepResult
from pykv.ui.views.widgets import target
from pykv.ui.views.widgets.fitted_chart import fitted
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.modelled_sweep import (
    MODELLED_RUNS_NOTE,
    crossover_figure,
    modelled_cost_column,
    modelled_note_column,
    modelled_run_columns,
    modelled_runs_figure,
)


def with_modelled(result: SweepResult, rows: list[dict], costs: list[dict], est: Estimate) -> SweepResult:
    """The sweep's frames with the modelled columns added (measured ones untouched)."""
    runs = result.runs.reset_index(drop=True).join(modelled_run_columns(rows[: len(result.runs)], est))
    preemptions = result.preemptions.copy()
    preemptions["modelled_target"] = est.label
    preemptions["modelled_target_s"] = modelled_cost_column(rows, costs, est)[: len(preemptions)]
    preemptions["modelled_note"] = modelled_note_column(rows, costs, est)[: len(preemptions)]
    return dataclasses.replace(result, runs=runs, preemptions=preemptions)


def render(runs, block_size: int, export, dark: bool, capacity: int | None, measure: str = DEFAULT_MEASURE) -> None:
    """The modelled charts and the formulas, below the measured ones (their measured half on ``measure``'s clock)."""
    est = target.current_estimate()
    draw_runs = partial(modelled_runs_figure, runs, capacity=capacity, measure=measure)
    st.plotly_chart(fitted(draw_runs(dark=dark)), theme=None, key="sweep_modelled_runs", config=PLOT_CONFIG)
    export(draw_runs, "modelled_throughput", "sweep_modelled_runs")
    st.caption(MODELLED_RUNS_NOTE.format(label=est.label))
    draw_crossover = partial(crossover_figure, crossover_curves(est, block_size))
    st.plotly_chart(fitted(draw_crossover(dark=dark)), theme=None, key="sweep_crossover", config=PLOT_CONFIG)
    export(draw_crossover, "crossover", "sweep_crossover")
    target.formulas_expander(est, key="sweep_formulas")
