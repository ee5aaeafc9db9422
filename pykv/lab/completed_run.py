"""A workload run to completion on an engine of its own, and what the whole run cost: the one
summary behind a sweep's rows and a lesson's side runs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pykv.border.config import EngineConfig
from pykv.border.pcie import PCIE_GBPS, modelled_copy_seconds
from pykv.border.request import RequestOutput
from pykv.border.run_totals import MODELLED_PCIE_FIELDS, RunTotals
from pykv.border.step_report import StepReport
from pykv.border.workload import Workload
from pykv.engine.llm_engine import LLMEngine
from pykv.engine.model.loader import LoadedModel
from pykv.lab.workload_runner import WorkloadRunner


@dataclass(frozen=True)
class CompletedRun:
    engine: LLMEngine
    outputs: list[RequestOutput]  # the finished requests, in the workload's order, each with its forked sequences
    wall_s: float  # measured, the whole run
    done: bool  # False if max_steps ran out first
    reports: list[StepReport] = field(default_factory=list)  # every step's report: what a GPU model prices
    cpu_s: float = 0.0  # the engine thread's CPU time over the run (time.thread_time)

    def totals(self) -> RunTotals:
        """Counts, measured times (on the engine's device) and, labelled so, modelled PCIe times, from the
        engine's preemption records and its observer's totals."""
        config, records, observed = self.engine.config, self.engine.preemptions(), self.engine.totals()
        swaps = [r for r in records if r.mode == "swap"]
        trips = [2 if r.swap_in_s else 1 for r in swaps]  # out, and back in if it came back

        def modelled(gbps: float) -> float:
            return sum(
                modelled_copy_seconds(r.num_bytes, r.swap_copies or 1, gbps, config.pcie_copy_overhead_us) * n
                for r, n in zip(swaps, trips)
            )

        output_tokens = sum(len(o.output_token_ids) for o in self.outputs)
        return RunTotals(
            steps=self.engine.step_count,
            wall_s=self.wall_s,
            cpu_s=self.cpu_s,
            output_tokens=output_tokens,
            tokens_per_s=output_tokens / self.wall_s if self.wall_s > 0 else 0.0,
            tokens_per_cpu_s=output_tokens / self.cpu_s if self.cpu_s > 0 else 0.0,
            preemptions=len(records),
            recomputed_tokens=sum(r.recomputed_tokens for r in records),
            recompute_s=sum(r.recompute_s for r in records),
            recompute_cpu_s=sum(r.recompute_cpu_s for r in records),
            recompute_tax=observed.recompute_tax or 0.0,
            recompute_tax_time=observed.recompute_tax_time or 0.0,
            loaded_tokens=sum(r.loaded_tokens for r in records),
            swapped_bytes=sum(r.num_bytes for r in swaps),
            swap_s=sum((r.swap_out_s or 0.0) + (r.swap_in_s or 0.0) for r in swaps),
            swap_cpu_s=sum((r.swap_out_cpu_s or 0.0) + (r.swap_in_cpu_s or 0.0) for r in swaps),
            swap_copies=sum((r.swap_copies or 0) * n for r, n in zip(swaps, trips)),
            **{MODELLED_PCIE_FIELDS[gen]: modelled(gbps) for gen, gbps in PCIE_GBPS.items()},
        )


def run_to_completion(
    config: EngineConfig, workload: Workload, loaded: LoadedModel, max_steps: int = 100_000
) -> CompletedRun:
    engine = LLMEngine(config, loaded=loaded)
    runner = WorkloadRunner(engine, workload)
    t0, c0 = time.perf_counter(), time.thread_time()
    reports = runner.run(max_steps=max_steps)
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    forked: dict[str, list[RequestOutput]] = {}  # parallel sampling: each request's forked sequences follow it
    for out in engine.outputs.values():
        if out.parent_id is not None:
            forked.setdefault(out.parent_id, []).append(out)
    outputs = [
        o for rid in runner.request_ids if rid in engine.outputs for o in [engine.outputs[rid]] + forked.get(rid, [])
    ]
    return CompletedRun(engine, outputs, wall, runner.done(), reports, cpu)
