"""Sweeps: one seeded workload run to completion over a range of pool sizes (or block sizes, or
max_num_seqs), once per preemption mode, collecting what each run really cost on this device."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import pandas as pd

from pykv.config import EngineConfig
from pykv.costs import modelled_copy_seconds
from pykv.engine import LLMEngine
from pykv.loader import LoadedModel, load_model
from pykv.workload import WorkloadRunner, make_workload

# Named modes: the engine settings each stands for.
MODES: dict[str, dict] = {
    "recompute": {"preemption_mode": "recompute", "enable_prefix_caching": False},
    "swap": {"preemption_mode": "swap", "enable_prefix_caching": False, "swap_copy": "batched"},
    "swap per-block": {"preemption_mode": "swap", "enable_prefix_caching": False, "swap_copy": "per_block"},
    "recompute+prefix": {"preemption_mode": "recompute", "enable_prefix_caching": True},
    "swap+prefix": {"preemption_mode": "swap", "enable_prefix_caching": True, "swap_copy": "batched"},
}
AXES = ("num_gpu_blocks", "block_size", "max_num_seqs")
PCIE_GBPS = {"gen4": 25.0, "gen5": 50.0}  # x16, pinned, effective
RUN_COLUMNS = [
    "mode", "axis", "value", "num_gpu_blocks", "block_size", "max_num_seqs", "preemption_mode", "prefix_caching",
    "swap_copy", "steps", "wall_s", "output_tokens", "tokens_per_s", "preemptions", "recomputed_tokens", "recompute_s",
    "swapped_bytes", "swap_s", "swap_copies", "modelled_pcie_gen4_s", "modelled_pcie_gen5_s", "ttft_p50_s", "ttft_p95_s",
    "tpot_p50_s", "tpot_p95_s", "device",
]


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep. With ``axis="block_size"`` the pool keeps its token capacity
    (``num_gpu_blocks * block_size`` of ``base``), so only the block granularity changes."""

    workload: str = "storm"
    workload_args: dict = field(default_factory=lambda: {"n": 8, "max_tokens": 48})
    seed: int = 0
    axis: str = "num_gpu_blocks"
    values: tuple[int, ...] = (24, 32, 48, 64, 96, 128)
    modes: tuple[str, ...] = ("recompute", "swap")
    base: EngineConfig = field(default_factory=lambda: EngineConfig(history_size=0, log_stats_interval=10**9))
    cpu_pool_factor: int = 4  # swap modes get a CPU pool this many times the device pool

    def __post_init__(self) -> None:
        if self.axis not in AXES:
            raise ValueError(f"axis must be one of {AXES}, got {self.axis!r}.")
        unknown = [m for m in self.modes if m not in MODES]
        if unknown:
            raise ValueError(f"Unknown modes {unknown}; choose from {', '.join(MODES)}.")
        if not self.values or any(v < 1 for v in self.values):
            raise ValueError(f"Sweep values must be positive integers, got {list(self.values)}.")
        if not self.modes:
            raise ValueError("Choose at least one mode.")

    def configs(self) -> list[tuple[str, int, EngineConfig]]:
        """Every run, in order: (mode, axis value, config). Configs are validated here, up front."""
        runs = []
        capacity = self.base.num_gpu_blocks * self.base.block_size
        for value in self.values:
            for mode in self.modes:
                changes = dict(MODES[mode])
                if self.axis == "block_size":
                    changes |= {"block_size": value, "num_gpu_blocks": max(1, capacity // value)}
                else:
                    changes[self.axis] = value
                blocks = changes.get("num_gpu_blocks", self.base.num_gpu_blocks)
                if changes["preemption_mode"] == "swap":
                    changes["num_cpu_blocks"] = self.cpu_pool_factor * blocks
                runs.append((mode, value, self.base.replace(**changes)))
        return runs


@dataclass
class SweepResult:
    runs: pd.DataFrame  # one row per run, RUN_COLUMNS
    preemptions: pd.DataFrame  # one row per preemption of every run, with its measured and modelled cost
    cancelled: bool = False


def run_one(config: EngineConfig, spec: SweepSpec, loaded: LoadedModel, mode: str, value: int) -> tuple[dict, list[dict]]:
    engine = LLMEngine(config, loaded=loaded)
    runner = WorkloadRunner(engine, make_workload(spec.workload, seed=spec.seed, **spec.workload_args))
    t0 = time.perf_counter()
    runner.run()
    wall = time.perf_counter() - t0
    outs = [engine.outputs[rid] for rid in runner.request_ids]
    records = engine.ledger.records
    swaps = [r for r in records if r.mode == "swap"]

    def modelled(gbps: float) -> float:
        return sum(
            modelled_copy_seconds(r.num_bytes, r.swap_copies or 1, gbps, config.pcie_copy_overhead_us) * (2 if r.swap_in_s else 1)
            for r in swaps
        )

    ttft = pd.Series([o.ttft_s for o in outs if o.ttft_s is not None], dtype=float)
    tpot = pd.Series([o.tpot_s for o in outs if o.tpot_s is not None], dtype=float)
    output_tokens = sum(len(o.output_token_ids) for o in outs)
    row = {
        "mode": mode, "axis": spec.axis, "value": value, "num_gpu_blocks": config.num_gpu_blocks,
        "block_size": config.block_size, "max_num_seqs": config.max_num_seqs, "preemption_mode": config.preemption_mode,
        "prefix_caching": config.enable_prefix_caching, "swap_copy": config.swap_copy, "steps": engine.step_count,
        "wall_s": wall, "output_tokens": output_tokens, "tokens_per_s": output_tokens / wall,
        "preemptions": len(records), "recomputed_tokens": sum(r.recomputed_tokens for r in records),
        "recompute_s": sum(r.recompute_s for r in records), "swapped_bytes": sum(r.num_bytes for r in swaps),
        "swap_s": sum((r.swap_out_s or 0.0) + (r.swap_in_s or 0.0) for r in swaps),
        "swap_copies": sum((r.swap_copies or 0) * (2 if r.swap_in_s else 1) for r in swaps),
        "modelled_pcie_gen4_s": modelled(PCIE_GBPS["gen4"]), "modelled_pcie_gen5_s": modelled(PCIE_GBPS["gen5"]),
        "ttft_p50_s": ttft.quantile(0.5), "ttft_p95_s": ttft.quantile(0.95),
        "tpot_p50_s": tpot.quantile(0.5), "tpot_p95_s": tpot.quantile(0.95), "device": config.device,
    }
    costs = []
    for r in records:
        if r.mode == "swap" and r.swap_in_s is not None:
            measured = r.swap_out_s + r.swap_in_s
        elif r.mode == "recompute" and r.recovered_step is not None:
            measured = r.recompute_s
        else:
            continue  # aborted, or never recovered (finished early): no complete cost to show
        copies = (r.swap_copies or 1) * 2
        costs.append({
            "mode": mode, "value": value, "preemption_mode": r.mode, "block_size": config.block_size,
            "seq_len": r.num_tokens, "num_bytes": r.num_bytes, "measured_s": measured,
            "recomputed_tokens": r.recomputed_tokens, "steps_lost": r.steps_lost, "device": r.device,
            **{f"modelled_pcie_{gen}_s": modelled_copy_seconds(2 * r.num_bytes, copies, gbps, config.pcie_copy_overhead_us)
               if r.mode == "swap" else None for gen, gbps in PCIE_GBPS.items()},
        })
    return row, costs


def run_sweep(
    spec: SweepSpec,
    loaded: Optional[LoadedModel] = None,
    on_progress: Optional[Callable[[int, int, dict], None]] = None,
    should_cancel: Optional[Callable[[], bool]] = None,
) -> SweepResult:
    """Run every (value, mode) of the spec; each run is one unit of progress and a cancel point."""
    runs = spec.configs()
    loaded = loaded or load_model(spec.base.model, spec.base.device, spec.base.dtype)
    rows, costs = [], []
    for i, (mode, value, config) in enumerate(runs):
        if should_cancel is not None and should_cancel():
            return SweepResult(pd.DataFrame(rows, columns=RUN_COLUMNS), pd.DataFrame(costs), cancelled=True)
        row, run_costs = run_one(config, spec, loaded, mode, value)
        rows.append(row)
        costs.extend(run_costs)
        if on_progress is not None:
            on_progress(i + 1, len(runs), row)
    return SweepResult(pd.DataFrame(rows, columns=RUN_COLUMNS), pd.DataFrame(costs))
