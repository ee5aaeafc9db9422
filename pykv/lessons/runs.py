"""Side runs: a lesson's ``run:`` action runs a workload to completion on an engine of its own (the
lesson's Lab is not touched) and keeps a RunSummary of what it cost, read by ``run.NAME.FIELD``."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Optional

from pykv.completed_run import run_to_completion
from pykv.config import EngineConfig
from pykv.lessons.schema import MAX_STEPS_PER_ACTION
from pykv.loader import LoadedModel
from pykv.workload import Workload


@dataclass(frozen=True)
class RunSummary:
    """One side run, measured on ``device``; the totals are ``CompletedRun.totals()``'s. Times are
    seconds; ``*_p50_s`` are medians over requests."""

    name: str
    config: dict  # the EngineConfig it ran with, as a dict
    device: str
    steps: int
    wall_s: float
    output_tokens: int
    tokens_per_s: float
    preemptions: int
    recomputed_tokens: int
    recompute_s: float
    swapped_bytes: int
    swap_s: float  # measured swap-out + swap-in copy time
    swap_copies: int
    modelled_pcie_gen4_s: float  # the same copies modelled over PCIe (not measured)
    modelled_pcie_gen5_s: float
    ttft_p50_s: Optional[float]
    tpot_p50_s: Optional[float]
    outputs: dict[str, list[int]]  # request id -> output token ids
    metrics: dict[str, float]  # the engine's Prometheus samples at the end
    preemption_records: list[dict]  # every PreemptionCost, as dicts


def side_run(name: str, config: EngineConfig, workload: Workload, loaded: LoadedModel,
             max_steps: int = MAX_STEPS_PER_ACTION) -> RunSummary:
    """Run ``workload`` to completion on a fresh engine; ValueError if it does not end within ``max_steps``."""
    config = config.replace(history_size=0, log_stats_interval=10**9)
    run = run_to_completion(config, workload, loaded, max_steps)
    if not run.done:
        raise ValueError(f"side run {name!r} did not finish within {max_steps} engine steps; give it a smaller "
                         "workload or a larger pool.")

    def median(values: list[Optional[float]]) -> Optional[float]:
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    return RunSummary(
        name=name, config=dataclasses.asdict(config), device=config.device, **run.totals(),
        ttft_p50_s=median([o.ttft_s for o in run.outputs]), tpot_p50_s=median([o.tpot_s for o in run.outputs]),
        outputs={o.request_id: list(o.output_token_ids) for o in run.outputs}, metrics=run.engine.metrics.as_dict(),
        preemption_records=[r.to_dict() for r in run.engine.ledger.records],
    )
