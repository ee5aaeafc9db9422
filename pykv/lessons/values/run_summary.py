"""RunSummary: what a lesson's side run cost, as plain data (light: validating a path that reads one
imports nothing of the engine; ``pykv.lessons.run.runs`` makes them)."""

from __future__ import annotations

from dataclasses import dataclass

from pykv.border.step_report import PreemptionView


@dataclass(frozen=True)
class RunSummary:
    """One side run, measured on ``device``; the totals are ``CompletedRun.totals()``'s. Times are
    seconds; ``*_p50_s`` are medians over requests."""

    name: str
    config: dict  # the EngineConfig it ran with, as a dict
    device: str
    steps: int
    wall_s: float
    cpu_s: float  # the engine thread's CPU time over the run (time.thread_time)
    output_tokens: int
    tokens_per_s: float
    tokens_per_cpu_s: float
    preemptions: int
    recomputed_tokens: int
    recompute_s: float
    recompute_cpu_s: float
    recompute_tax: float  # share of prefill tokens that recomputed dropped KV, 0-1 (pykv:recompute_tax)
    recompute_tax_time: float  # the same share of prefill forward time
    loaded_tokens: int  # dropped tokens loaded back from the CPU offloading tier instead of recomputed
    swapped_bytes: int
    swap_s: float  # measured swap-out + swap-in copy time
    swap_cpu_s: float  # the engine thread's CPU time over those copies
    swap_copies: int
    modelled_pcie_gen4_s: float  # the same copies modelled over PCIe (not measured)
    modelled_pcie_gen5_s: float
    modelled_target: str  # the GPU + model the modelled_* figures below price the run's schedule on
    modelled_s: float  # the whole run's steps priced on it (modelled, not measured)
    modelled_tokens_per_s: float  # output tokens / modelled_s
    modelled_recompute_s: float  # its recompute bills
    modelled_swap_s: float  # its swap bills: the copies out and back in over the target's host link
    modelled_delay_to_others_s: float  # what its preemptions made the other requests wait, summed over them
    ttft_p50_s: float | None
    tpot_p50_s: float | None
    outputs: dict[str, list[int]]  # request id -> output token ids
    metrics: dict[str, float]  # the engine's Prometheus samples at the end
    preemption_records: list[PreemptionView]  # every preemption of the run
