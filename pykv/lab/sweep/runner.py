"""Running a sweep: each point (a series and policy at one axis value) run to completion ``repeats`` times on this
device, its counts once and each time as the median of its repeats with their spread, on the wall clock and on the
engine thread's CPU clock; and the machine's load when it ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import pandas as pd

from pykv.border.config import EngineConfig
from pykv.border.pcie import PCIE_GBPS, modelled_copy_seconds
from pykv.border.run_totals import MODELLED_PCIE_FIELDS, RUN_TOTALS_COLUMNS
from pykv.border.step_report import PreemptionView
from pykv.border.workload import make_workload
from pykv.engine.model.loader import LoadedModel, load_model
from pykv.lab.completed_run import run_to_completion
from pykv.lab.sweep.repeats import (
    COST_SPREAD_COLUMNS,
    LATENCY_COLUMNS,
    SPREAD_COLUMNS,
    load_average,
    merge_costs,
    merge_runs,
)
from pykv.lab.sweep.spec import SweepPoint, SweepSpec

RUN_CONFIG_COLUMNS = [  # what a run was: its series (mode and release), axis value and the config fields a sweep varies
    "series",
    "mode",
    "vllm_profile",
    "vllm_release",
    "engine",
    "axis",
    "value",
    "num_gpu_blocks",
    "block_size",
    "max_num_seqs",
    "preemption_mode",
    "prefix_caching",
    "swap_copy",
    "preemption_victim",
]
RUN_COLUMNS = [  # totals: RunTotals' fields (each time the median of the repeats), then each time's spread
    *RUN_CONFIG_COLUMNS,
    *RUN_TOTALS_COLUMNS,
    *LATENCY_COLUMNS,
    *SPREAD_COLUMNS,
    "repeats",
    "load_1m",
    "device",
]
PREEMPTION_COLUMNS = [
    "series",
    "mode",
    "vllm_profile",
    "value",
    "preemption_mode",
    "block_size",
    "seq_len",
    "num_bytes",
    "measured_s",
    "measured_cpu_s",
    "recomputed_tokens",
    "steps_lost",
    "device",
    *MODELLED_PCIE_FIELDS.values(),
    *COST_SPREAD_COLUMNS,
]


@dataclass
class SweepResult:
    """``runs``: one row per point (RUN_COLUMNS). Times ending ``_s`` are measured on ``device`` (each the median of
    ``repeats`` runs, the fastest and slowest in ``<column>_lo`` / ``<column>_hi``; a ``*_cpu_s`` time is the engine
    thread's CPU time, see pykv.border.timing_measures) except ``modelled_pcie_*``, the same swaps' bytes and copies
    priced at PCIe Gen4/Gen5 x16 (PCIE_GBPS plus the config's per-copy overhead). Counts are the same every repeat.
    ``swapped_bytes`` counts each swap-out once; ``swap_s`` and ``swap_copies`` add the swap-in. ``load_1m``: the
    machine's load when the point started. ``preemptions``: one row per preemption whose cost is complete
    (PREEMPTION_COLUMNS): ``seq_len`` tokens lost, ``num_bytes`` of KV they held, ``measured_s`` = swap-out + swap-in
    copy time, or the re-prefill time apportioned to them (see pykv.engine.observe.costs)."""

    runs: pd.DataFrame
    preemptions: pd.DataFrame
    cancelled: bool = False


def _cost(r: PreemptionView) -> tuple[float, float] | None:
    """(wall, CPU) seconds of a preemption whose cost is complete; None for an abort or a victim never recovered."""
    if r.mode == "swap" and r.swap_out_s is not None and r.swap_in_s is not None:
        return r.swap_out_s + r.swap_in_s, (r.swap_out_cpu_s or 0.0) + (r.swap_in_cpu_s or 0.0)
    if r.mode == "recompute" and r.recovered_step is not None:
        return r.recompute_s, r.recompute_cpu_s
    return None


def run_one(spec: SweepSpec, point: SweepPoint, loaded: LoadedModel) -> tuple[dict, list[dict]]:
    """One run of ``point`` to completion: its row and its preemptions' rows."""
    config, label, value = point.config, point.label, point.value
    run = run_to_completion(config, make_workload(spec.workload, seed=spec.seed, **spec.workload_args), loaded)
    ttft = pd.Series([o.ttft_s for o in run.outputs if o.ttft_s is not None], dtype=float)
    tpot = pd.Series([o.tpot_s for o in run.outputs if o.tpot_s is not None], dtype=float)
    row = {
        "series": label,
        "mode": point.series.mode,
        "vllm_profile": config.vllm_profile,
        "vllm_release": config.profile.release,
        "engine": config.profile.engine.value,
        "axis": spec.axis,
        "value": value,
        "num_gpu_blocks": config.num_gpu_blocks,
        "block_size": config.block_size,
        "max_num_seqs": config.max_num_seqs,
        "preemption_mode": config.preemption_mode,
        "prefix_caching": config.enable_prefix_caching,
        "swap_copy": config.swap_copy,
        "preemption_victim": config.preemption_victim,
        **run.totals().as_row(),
        "ttft_p50_s": ttft.quantile(0.5),
        "ttft_p95_s": ttft.quantile(0.95),
        "tpot_p50_s": tpot.quantile(0.5),
        "tpot_p95_s": tpot.quantile(0.95),
        "device": config.device,
        "reports": run.reports,  # not a column: the schedule pykv.gpu_model prices for the page's modelled series
    }
    costs = []
    for r in run.engine.preemptions():
        cost = _cost(r)
        if cost is None:
            continue  # aborted, or never recovered (finished early): no complete cost to show
        copies = (r.swap_copies or 1) * 2
        costs.append(
            {
                "series": label,
                "mode": point.series.mode,
                "vllm_profile": config.vllm_profile,
                "value": value,
                "preemption_mode": r.mode,
                "block_size": config.block_size,
                "seq_len": r.num_tokens,
                "num_bytes": r.num_bytes,
                "measured_s": cost[0],
                "measured_cpu_s": cost[1],
                "recomputed_tokens": r.recomputed_tokens,
                "steps_lost": r.steps_lost,
                "device": r.device,
                "step": r.step,
                "request_id": r.request_id,  # not columns: match the row to its modelled bill
                **{
                    MODELLED_PCIE_FIELDS[gen]: None
                    if r.mode != "swap"
                    else modelled_copy_seconds(2 * r.num_bytes, copies, gbps, config.pcie_copy_overhead_us)
                    for gen, gbps in PCIE_GBPS.items()
                },  # the same field names as RunTotals' (MODELLED_PCIE_FIELDS)
            }
        )
    return row, costs


def run_point(spec: SweepSpec, point: SweepPoint, loaded: LoadedModel) -> tuple[dict, list[dict]]:
    """``point`` run ``spec.repeats`` times, back to back: one row (medians and spreads, the load when it started)
    and its preemptions (each cost the median of its repeats)."""
    load = load_average()
    rows, costs = [], []
    for _ in range(spec.repeats):
        row, cost = run_one(spec, point, loaded)
        rows.append(row)
        costs.append(cost)
    where = f"{point.label} at {spec.axis}={point.value}"
    return merge_runs(rows, where) | {"load_1m": load}, merge_costs(costs, where)


def warm_up(config: EngineConfig, loaded: LoadedModel) -> None:
    """One tiny untimed run first, so that the first point does not pay the process's first forward pass."""
    run_to_completion(config, make_workload("burst", n=1, max_tokens=2), loaded)


def iter_runs(spec: SweepSpec, loaded: LoadedModel) -> Iterator[tuple[dict, list[dict]]]:
    """Each point of the spec, lazily, in order: (its row, its preemption rows), after one untimed warm-up run."""
    points = spec.configs()
    warm_up(points[0].config, loaded)
    for point in points:
        yield run_point(spec, point, loaded)


def sweep_result(rows: list[dict], costs: list[dict], cancelled: bool = False) -> SweepResult:
    runs, preemptions = pd.DataFrame(rows, columns=RUN_COLUMNS), pd.DataFrame(costs, columns=PREEMPTION_COLUMNS)
    return SweepResult(runs, preemptions, cancelled)


def run_sweep(
    spec: SweepSpec,
    loaded: LoadedModel | None = None,
    on_progress: Callable[[int, int, dict], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> SweepResult:
    """Run every point of the spec; each point (its repeats) is one unit of progress and a cancel point."""
    total = spec.num_points
    runs = iter_runs(spec, loaded or load_model(spec.base.model, spec.base.device, spec.base.dtype))
    rows: list[dict] = []
    costs: list[dict] = []
    for done in range(1, total + 1):
        if should_cancel is not None and should_cancel():
            return sweep_result(rows, costs, cancelled=True)
        row, run_costs = next(runs)
        rows.append(row)
        costs.extend(run_costs)
        if on_progress is not None:
            on_progress(done, total, row)
    return sweep_result(rows, costs)
