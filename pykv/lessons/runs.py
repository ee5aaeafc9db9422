"""Side runs: a lesson's ``run:`` action runs a workload to completion on an engine of its own (the
lesson's Lab is not touched) and keeps a RunSummary of what it cost, read by ``run.NAME.FIELD``."""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass
from typing import Optional

from pykv.config import EngineConfig
from pykv.costs import modelled_copy_seconds
from pykv.engine import LLMEngine
from pykv.lessons.schema import MAX_STEPS_PER_ACTION
from pykv.loader import LoadedModel
from pykv.sweep import PCIE_GBPS
from pykv.workload import Workload, WorkloadRunner


@dataclass(frozen=True)
class RunSummary:
    """One side run, measured on ``device``. Times are seconds; ``*_p50_s`` are medians over requests."""

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
    engine = LLMEngine(config, loaded=loaded)
    runner = WorkloadRunner(engine, workload)
    t0 = time.perf_counter()
    runner.run(max_steps=max_steps)
    wall = time.perf_counter() - t0
    if not runner.done():
        raise ValueError(f"side run {name!r} did not finish within {max_steps} engine steps; give it a smaller "
                         "workload or a larger pool.")
    outs = [engine.outputs[rid] for rid in runner.request_ids]
    records = engine.ledger.records
    swaps = [r for r in records if r.mode == "swap"]

    def modelled(gbps: float) -> float:
        return sum(modelled_copy_seconds(r.num_bytes, r.swap_copies or 1, gbps, config.pcie_copy_overhead_us)
                   * (2 if r.swap_in_s else 1) for r in swaps)

    def median(values: list[Optional[float]]) -> Optional[float]:
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    output_tokens = sum(len(o.output_token_ids) for o in outs)
    return RunSummary(
        name=name, config=dataclasses.asdict(config), device=config.device, steps=engine.step_count, wall_s=wall,
        output_tokens=output_tokens, tokens_per_s=output_tokens / wall if wall > 0 else 0.0,
        preemptions=len(records), recomputed_tokens=sum(r.recomputed_tokens for r in records),
        recompute_s=sum(r.recompute_s for r in records), swapped_bytes=sum(r.num_bytes for r in swaps),
        swap_s=sum((r.swap_out_s or 0.0) + (r.swap_in_s or 0.0) for r in swaps),
        modelled_pcie_gen4_s=modelled(PCIE_GBPS["gen4"]), modelled_pcie_gen5_s=modelled(PCIE_GBPS["gen5"]),
        ttft_p50_s=median([o.ttft_s for o in outs]), tpot_p50_s=median([o.tpot_s for o in outs]),
        outputs={o.request_id: list(o.output_token_ids) for o in outs}, metrics=engine.metrics.as_dict(),
        preemption_records=[r.to_dict() for r in records],
    )
