"""A sweep as a review pack: what was swept (workload, axis, values, modes, the base configuration and its
vLLM command), every chart the Sweep page draws (the measured ones, then the modelled ones on the page's
target, labelled so), and its runs and preemptions as tables (numbers as people write them) and CSVs."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from pykv.border.config import EngineConfig
from pykv.border.csv_safe import csv_text
from pykv.border.units import fmt_bytes, fmt_fixed
from pykv.border.vllm_command import serve_command
from pykv.engine.kv.cache_engine import CacheEngine
from pykv.engine.max_model_len import fit_max_model_len
from pykv.engine.model.model import ModelConfig
from pykv.gpu_model import Estimate
from pykv.lab.sweep import MODES, PREEMPTION_COLUMNS, RUN_COLUMNS, SweepResult, SweepSpec
from pykv.review_pack.config_section import config_section
from pykv.review_pack.modelled import crossover_pack_figure, target_blocks
from pykv.review_pack.page import (
    Num,
    PackFigure,
    ReviewPack,
    Section,
    code_block,
    definition_list,
    fitted,
    para,
    table,
)
from pykv.viz import block_size_cost_figure, preemption_cost_figure, runs_figure
from pykv.viz.captions import sweep_costs_note
from pykv.viz.modelled import MODELLED_ONE_LINE
from pykv.viz.modelled_sweep import MODELLED_RUN_COLUMNS, MODELLED_RUNS_NOTE, modelled_runs_figure
from pykv.viz.tax_chart import recompute_tax_figure

# The Runs and Preemptions tables as the page would say them: (column, header, formatter); the CSVs have every
# column, unformatted. Numbers get fixed decimals and a unit (units.fmt_fixed, fmt_bytes): never 1e+03.
Formatter = Callable[[Any], object]


def _count(v) -> object:
    return Num(fmt_fixed(v, 0))


def _bytes(v) -> object:
    return Num("—" if v is None or v != v else fmt_bytes(float(v)))


def _s(decimals: int) -> Formatter:
    return lambda v: Num(fmt_fixed(v, decimals, "s"))


def _ms(decimals: int) -> Formatter:
    return lambda v: Num(fmt_fixed(None if v is None else v * 1e3, decimals, "ms"))


def _rate(decimals: int) -> Formatter:
    return lambda v: Num(fmt_fixed(v, decimals))


RUN_TABLE: list[tuple[str, str, Formatter]] = [
    ("mode", "mode", str),
    ("vllm_profile", "release", str),
    ("value", "value", _count),
    ("preemptions", "preemptions", _count),
    ("recomputed_tokens", "recomputed tokens", _count),
    ("swapped_bytes", "swapped out", _bytes),
    ("wall_s", "wall time", _s(2)),
    ("tokens_per_s", "output tokens/s", _rate(1)),
    ("recompute_s", "recompute time", _ms(1)),
    ("swap_s", "swap time", _ms(2)),
    ("modelled_pcie_gen5_s", "swaps over PCIe Gen5 (modelled)", _ms(3)),
]
MODELLED_RUN_TABLE: list[tuple[str, str, Formatter]] = [
    ("mode", "mode", str),
    ("value", "value", _count),
    ("modelled_s", "run time (modelled)", _s(3)),
    ("modelled_tokens_per_s", "output tokens/s (modelled)", _rate(0)),
    ("modelled_recompute_s", "recompute bills (modelled)", _ms(2)),
    ("modelled_swap_s", "swap bills (modelled)", _ms(2)),
    ("modelled_delay_to_others_s", "delay to others (modelled)", _ms(2)),
]
PREEMPTION_TABLE: list[tuple[str, str, Formatter]] = [
    ("mode", "mode", str),
    ("value", "value", _count),
    ("preemption_mode", "preempted by", str),
    ("seq_len", "victim's tokens", _count),
    ("num_bytes", "KV", _bytes),
    ("measured_s", "measured", _ms(3)),
    ("recomputed_tokens", "recomputed tokens", _count),
    ("steps_lost", "steps lost", _count),
    ("modelled_pcie_gen5_s", "PCIe Gen5 (modelled)", _ms(3)),
    ("modelled_target_s", "bill on the target (modelled)", _ms(3)),
]
assert {c for c, _, _ in RUN_TABLE + MODELLED_RUN_TABLE} <= set(RUN_COLUMNS) | set(MODELLED_RUN_COLUMNS)
assert {c for c, _, _ in PREEMPTION_TABLE} <= set(PREEMPTION_COLUMNS) | {"modelled_target_s"}
MAX_PREEMPTION_ROWS = 300  # rows of the preemptions table in the page (the CSV has them all)


def formatted_table(
    frame: pd.DataFrame, spec: list[tuple[str, str, Formatter]], cls: str, headers: dict[str, str] | None = None
) -> str:
    """``frame``'s columns of ``spec`` (those it has) as a page table: each cell formatted, widths fitted to what the
    columns hold (a header breaks between words, never inside one)."""
    spec = [(c, (headers or {}).get(c, h), f) for c, h, f in spec if c in frame.columns]
    columns = [h for _, h, _ in spec]
    rows = [
        tuple("—" if f is str and (v is None or v != v) else f(v) for (_, _, f), v in zip(spec, row))
        for row in frame[[c for c, _, _ in spec]].astype(object).itertuples(index=False, name=None)
    ]
    return table(columns, rows, cls, fitted(columns, rows))


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
    spec: SweepSpec, result: SweepResult, capacity: int | None = None, estimate: Estimate | None = None
) -> tuple[list[PackFigure], list[PackFigure]]:
    """(measured charts, modelled charts): every chart the Sweep page draws for this sweep, in its order, from the
    same figure functions. The modelled two need ``estimate`` (the page's target) and runs priced on it
    (``pykv.ui.views.panels.sweep_modelled.with_modelled``: the runs table's modelled columns)."""
    runs, costs = result.runs, result.preemptions
    measured = [
        PackFigure(
            "sweep-runs",
            "Every run of the sweep: wall time, throughput and preemptions per mode.",
            runs_figure(runs, capacity=capacity),
        )
    ]
    if spec.axis == "block_size":
        measured.append(
            PackFigure(
                "sweep-block-size-cost",
                "Preemption cost per KiB of KV against block size.",
                block_size_cost_figure(costs),
            )
        )
    measured.append(
        PackFigure(
            "sweep-recompute-tax",
            "The recompute tax: how much prefill work redid work already done, per mode.",
            recompute_tax_figure(runs),
        )
    )
    measured.append(
        PackFigure(
            "sweep-preemption-cost",
            "Each preemption's cost against the victim's sequence length.",
            preemption_cost_figure(costs),
        )
    )
    modelled = []
    if estimate is not None:
        if "modelled_target" in runs.columns:
            modelled.append(
                PackFigure(
                    "sweep-modelled-throughput",
                    f"Throughput per mode, measured and modelled on {estimate.label}.",
                    modelled_runs_figure(runs, capacity=capacity),
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
) -> ReviewPack:
    """``total``: the runs the sweep was to make (more than were made if it was stopped); ``capacity``: for a
    max_num_seqs sweep, how many requests the pool carries to the end (marked on the chart); ``model``: the
    sweep's model, whose shape gives each run's vLLM command its --swap-space and --max-model-len;
    ``estimate``: the modelled target the page priced the runs on (its modelled charts and columns)."""
    runs, costs = result.runs, result.preemptions
    total = total if total is not None else spec.num_runs
    device = ", ".join(sorted(runs["device"].astype(str).unique())) if len(runs) else spec.base.device
    args = ", ".join(f"{k}={v}" for k, v in spec.workload_args.items())
    summary = definition_list(
        [
            ("workload", f"preset {spec.workload!r} ({args}), seed {spec.seed}"),
            ("swept", f"{spec.axis} over {', '.join(map(str, spec.values))}"),
            ("modes", "; ".join(f"{m} ({', '.join(f'{k}={v}' for k, v in MODES[m].items())})" for m in spec.modes)),
            (
                "runs",
                f"{len(runs)} of {total}"
                + (" (stopped early)" if result.cancelled else "")
                + (f" in {seconds:.1f} s" if seconds is not None else ""),
            ),
            ("device (measured on)", device),
            *([("modelled on", f"{estimate.label} (modelled, not measured)")] if estimate is not None else []),
        ]
    ) + para(
        "Swap modes run under vllm_profile=v0.6 (vLLM 0.6.3.post1), the last release that swapped; the "
        "vllm_profile column says which release each run followed. PCIe figures are modelled.",
        "muted",
    )
    measured, modelled = sweep_charts(spec, result, capacity, estimate)
    shown = costs.head(MAX_PREEMPTION_ROWS)
    cut = f" (the first {MAX_PREEMPTION_ROWS} of {len(costs)}; the CSV has them all)" if len(costs) > len(shown) else ""
    base_block, base_len = _engine_sizes(spec.base, model)
    commands = [
        f"# {mode}, {spec.axis}={value} (vllm_profile={config.vllm_profile})\n"
        + serve_command(config, *_engine_sizes(config, model))
        for mode, value, config in spec.configs()
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
                    f"One row per run, measured on {device}; the last column models the run's swaps "
                    "(the tiny model's KV bytes) over PCIe Gen5, not measured."
                ),
                formatted_table(runs, RUN_TABLE, "runs wide", headers),
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
    subtitle = f"A sweep of {spec.axis} by {', '.join(spec.modes)} on preset {spec.workload!r}, on {device}."
    return ReviewPack(
        "pykv sweep review pack",
        subtitle,
        tuple(sections),
        summary=summary,
        csvs={"sweep_runs.csv": csv_text(runs), "sweep_preemptions.csv": csv_text(costs)},
    )


AXIS_HEADERS = {"num_gpu_blocks": "pool (blocks)", "block_size": "block size (tokens)", "max_num_seqs": "max_num_seqs"}


def _zero_bills(costs: pd.DataFrame) -> str:
    zero = int((costs["modelled_target_s"].fillna(0) <= 0).sum())
    return f" ({zero} of {len(costs)} are 0: the victim was preempted again first, or the run ended)" if zero else ""
