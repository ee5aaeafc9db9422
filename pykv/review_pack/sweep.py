"""A sweep as a review pack: what was swept (workload, axis, values, its series each named with its vLLM release and
engine generation, the base configuration and its vLLM command), every chart the Sweep page draws (the measured
ones on the clock the page showed, each point's median and spread, then the modelled ones on the page's target,
labelled so), and its runs and preemptions as tables (numbers as people write them) and CSVs, with the machine's
load while it ran."""

from __future__ import annotations

import os

import pandas as pd

from pykv.border.config import EngineConfig
from pykv.border.csv_safe import csv_text
from pykv.border.timing_measures import DEFAULT_MEASURE, MEASURE_NOTES, MEASURES, NOISY_SPREAD, is_noisy, twin
from pykv.border.vllm_command import serve_command
from pykv.engine.kv.cache_engine import CacheEngine
from pykv.engine.max_model_len import fit_max_model_len
from pykv.engine.model.model import ModelConfig
from pykv.gpu_model import Estimate
from pykv.lab.sweep import MODES, SweepResult, SweepSpec
from pykv.review_pack.config_section import config_section
from pykv.review_pack.modelled import crossover_pack_figure, target_blocks
from pykv.review_pack.page import (
    PackFigure,
    ReviewPack,
    Section,
    code_block,
    definition_list,
    para,
)
from pykv.review_pack.sweep_tables import (
    MAX_PREEMPTION_ROWS,
    MODELLED_RUN_TABLE,
    PREEMPTION_TABLE,
    RUN_TABLE,
    formatted_table,
    with_spreads,
)
from pykv.viz import block_size_cost_figure, preemption_cost_figure, runs_figure
from pykv.viz.captions import sweep_costs_note
from pykv.viz.modelled import MODELLED_ONE_LINE
from pykv.viz.modelled_sweep import MODELLED_RUNS_NOTE, modelled_runs_figure
from pykv.viz.tax_chart import recompute_tax_figure


def _engine_sizes(config: EngineConfig, model: ModelConfig | None) -> tuple[int | None, int | None]:
    """(bytes per block, the max_model_len the engine runs with) of a run, where the model is known."""
    if model is None:
        return None, None
    per_block = CacheEngine.bytes_per_block(model, config.block_size, config.dtype)
    try:
        return per_block, fit_max_model_len(config, model.max_position_embeddings, per_block)[0]
    except ValueError:  # a run whose engine would not start: its command keeps max_model_len as set
        return per_block, None


def sweep_charts(
    spec: SweepSpec,
    result: SweepResult,
    capacity: int | None = None,
    estimate: Estimate | None = None,
    measure: str = DEFAULT_MEASURE,
) -> tuple[list[PackFigure], list[PackFigure]]:
    """(measured charts, modelled charts): every chart the Sweep page draws for this sweep, in its order, from the
    same figure functions, on the clock the page showed (``measure``). The modelled two need ``estimate`` (the page's
    target) and runs priced on it (``pykv.ui.views.panels.sweep_modelled.with_modelled``: the runs table's modelled
    columns)."""
    runs, costs = result.runs, result.preemptions
    clock = MEASURES[measure]
    measured = [
        PackFigure(
            "sweep-runs",
            f"Every point of the sweep: end-to-end time and throughput ({clock}: the median of the repeats, bars from "
            "the fastest to the slowest) and preemptions (counted), one line per series.",
            runs_figure(runs, capacity=capacity, measure=measure),
        )
    ]
    if spec.axis == "block_size":
        measured.append(
            PackFigure(
                "sweep-block-size-cost",
                f"Preemption cost per KiB of KV against block size ({clock}).",
                block_size_cost_figure(costs, measure=measure),
            )
        )
    measured.append(
        PackFigure(
            "sweep-recompute-tax",
            "The recompute tax: how much prefill work redid work already done, per series (tokens counted; time on "
            "the wall clock).",
            recompute_tax_figure(runs),
        )
    )
    measured.append(
        PackFigure(
            "sweep-preemption-cost",
            f"Each preemption's cost against the victim's sequence length ({clock}), beside its modelled bills.",
            preemption_cost_figure(costs, measure=measure),
        )
    )
    modelled = []
    if estimate is not None:
        if "modelled_target" in runs.columns:
            modelled.append(
                PackFigure(
                    "sweep-modelled-throughput",
                    f"Throughput per series, measured ({clock}) and modelled on {estimate.label}.",
                    modelled_runs_figure(runs, capacity=capacity, measure=measure),
                )
            )
        modelled.append(crossover_pack_figure(estimate, spec.base.block_size, "sweep-modelled-crossover"))
    return measured, modelled


def sweep_pack(
    spec: SweepSpec,
    result: SweepResult,
    total: int | None = None,
    seconds: float | None = None,
    capacity: int | None = None,
    model: ModelConfig | None = None,
    estimate: Estimate | None = None,
    measure: str = DEFAULT_MEASURE,
) -> ReviewPack:
    """``total``: the points the sweep was to run (more than were run if it was stopped); ``capacity``: for a
    max_num_seqs sweep, how many requests the pool carries to the end (marked on the chart); ``model``: the
    sweep's model, whose shape gives each run's vLLM command its --swap-space and --max-model-len;
    ``estimate``: the modelled target the page priced the runs on (its modelled charts and columns); ``measure``:
    the clock the charts show (the tables have both)."""
    runs, costs = result.runs, result.preemptions
    total = total if total is not None else spec.num_points
    device = ", ".join(sorted(runs["device"].astype(str).unique())) if len(runs) else spec.base.device
    args = ", ".join(f"{k}={v}" for k, v in spec.workload_args.items())
    summary = definition_list(
        [
            ("workload", f"preset {spec.workload!r} ({args}), seed {spec.seed}"),
            ("swept", f"{spec.axis} over {', '.join(map(str, spec.values))}"),
            ("series", "; ".join(_series_text(spec, entry) for entry in spec.series)),
            (
                "points",
                f"{len(runs)} of {total}, each run {spec.repeats} time{'s' if spec.repeats > 1 else ''}"
                + (" (stopped early)" if result.cancelled else "")
                + (f", in {seconds:.1f} s" if seconds is not None else ""),
            ),
            ("device (measured on)", device),
            ("charts' clock", MEASURE_NOTES[measure]),
            ("load while it ran", _load(runs)),
            *([("modelled on", f"{estimate.label} (modelled, not measured)")] if estimate is not None else []),
        ]
    ) + para(
        _comparison(spec) + " " + _noisy(runs) + " Counts are the same every repeat; PCIe figures are modelled.",
        "muted",
    )
    measured, modelled = sweep_charts(spec, result, capacity, estimate, measure)
    shown = costs.head(MAX_PREEMPTION_ROWS)
    cut = f" (the first {MAX_PREEMPTION_ROWS} of {len(costs)}; the CSV has them all)" if len(costs) > len(shown) else ""
    base_block, base_len = _engine_sizes(spec.base, model)
    commands = [
        f"# {point.label}, {spec.axis}={point.value} (vllm_profile={point.config.vllm_profile})\n"
        + serve_command(point.config, *_engine_sizes(point.config, model))
        for point in spec.configs()
    ]
    headers = {"value": AXIS_HEADERS.get(spec.axis, spec.axis)}
    note = (
        f"Every preemption whose cost is complete{cut}. Measured on {device}; the PCIe column models the same "
        "swap's bytes over PCIe Gen5"
    )
    if estimate is not None and "modelled_target_s" in costs:
        note += (
            f"; the last, each preemption's bill modelled on {estimate.label}{_zero_bills(costs)}. The CSV has "
            "every column (modelled_note: why a modelled bill is 0 or small)"
        )
    preemption_note = para(note + ".")
    sections = [
        config_section(spec.base, base_block, "config", "Base configuration", max_model_len=base_len),
        Section(
            "commands",
            "Every run in vLLM",
            (
                para("Each run's engine as the vLLM release its profile follows would start it."),
                code_block("\n\n".join(commands), "serve"),
            ),
        ),
        Section("charts", "Charts", (*measured, para(sweep_costs_note(spec.base, device), "muted"))),
        Section(
            "runs",
            "Runs",
            (
                para(
                    f"One row per point, measured on {device}: each time the median of {spec.repeats} run(s), its "
                    "spread the slowest minus the fastest over the median; CPU time is the engine thread's "
                    "(time.thread_time), wall time the clock's. The PCIe column models the point's swaps (the tiny "
                    "model's KV bytes) over PCIe Gen5, not measured; load is the 1-minute load average when the "
                    "point started. The CSV has every time on both clocks with its fastest and slowest run."
                ),
                formatted_table(with_spreads(runs), RUN_TABLE, "runs wide", headers),
            ),
        ),
        Section(
            "preemptions",
            "Preemptions",
            (preemption_note, formatted_table(shown, PREEMPTION_TABLE, "preemptions wide", headers)),
        ),
    ]
    if estimate is not None:
        priced = "modelled_target" in runs.columns
        sections.insert(
            3,
            Section(
                "modelled",
                f"Modelled on {estimate.label}",
                (
                    para(
                        f"Modelled, not measured, on {estimate.label}. "
                        + MODELLED_ONE_LINE.format(label=f"modelled {estimate.label}")
                    ),
                    *modelled,
                    para(MODELLED_RUNS_NOTE.format(label=estimate.label), "muted"),
                    *(
                        [formatted_table(runs, MODELLED_RUN_TABLE, "runs wide", headers)]
                        if priced
                        else [
                            para(
                                "The runs were not priced on the target (no modelled columns): "
                                "only the crossover is drawn."
                            )
                        ]
                    ),
                    *target_blocks(estimate),
                ),
            ),
        )
    subtitle = (
        f"A sweep of {spec.axis} by {'; '.join(s.label for s in spec.series)} on preset {spec.workload!r}, on {device}."
    )
    return ReviewPack(
        "pykv sweep review pack",
        subtitle,
        tuple(sections),
        summary=summary,
        csvs={"sweep_runs.csv": csv_text(runs), "sweep_preemptions.csv": csv_text(costs)},
    )


def _series_text(spec: SweepSpec, series) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in MODES[series.mode].items())
    return f"{series.label} ({settings})"


def _comparison(spec: SweepSpec) -> str:
    if len(spec.profiles) == 1:
        return f"Every series ran under vllm_profile={spec.base.vllm_profile}: only the mode differs."
    return (
        "The series ran under different releases (asked for: compare across releases), so their lines differ in "
        "more than the mode; the series column names each one's release."
    )


def _load(runs: pd.DataFrame) -> str:
    loads = runs["load_1m"].dropna() if "load_1m" in runs else pd.Series(dtype=float)
    if loads.empty:
        return "unknown"
    cpus = os.cpu_count() or "?"
    return f"{loads.min():.2f} to {loads.max():.2f} (1-minute load average, {cpus} CPUs)"


def _noisy(runs: pd.DataFrame) -> str:
    flagged = [
        f"{r['series']} at {r['value']} ({which})"
        for _, r in runs.iterrows()
        for which in ("cpu", "wall")
        if is_noisy(
            r.get(f"{twin('wall_s', which)}_lo"), r.get(f"{twin('wall_s', which)}_hi"), r.get(twin("wall_s", which))
        )
    ]
    if not flagged:
        return f"No point's end-to-end time spread over {NOISY_SPREAD:.0%} of its median."
    return f"Spread over {NOISY_SPREAD:.0%} of the median (a busy machine): {'; '.join(flagged)}."


AXIS_HEADERS = {"num_gpu_blocks": "pool (blocks)", "block_size": "block size (tokens)", "max_num_seqs": "max_num_seqs"}


def _zero_bills(costs: pd.DataFrame) -> str:
    zero = int((costs["modelled_target_s"].fillna(0) <= 0).sum())
    return f" ({zero} of {len(costs)} are 0: the victim was preempted again first, or the run ended)" if zero else ""
