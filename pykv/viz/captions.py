"""Caption lines for exported figures: what configuration drew them, on which device, and what was
measured or modelled; and the command line that reproduces a sweep. Pure text from border types.
"""

from __future__ import annotations

import shlex
from typing import Iterable

from pykv.border.config import EngineConfig
from pykv.border.knob_table import knob_text
from pykv.border.pcie import PCIE_GBPS
from pykv.border.timing_measures import DEFAULT_MEASURE, MEASURES

SWEEP_AXIS_FLAGS = {
    "num_gpu_blocks": "--pool-sizes",
    "block_size": "--block-sizes",
    "max_num_seqs": "--max-num-seqs-values",
}


def config_summary(config: EngineConfig) -> str:
    """profile · pool blocks x block size · max_num_seqs · budget · preemption mode (+ what it adds)."""
    p = config.profile
    mode = f"preemption {config.preemption_mode}"
    if config.preemption_mode != "recompute" and config.num_cpu_blocks is not None:
        mode += f" ({config.num_cpu_blocks} CPU blocks)"
    parts = [
        f"vLLM {p.release} rules ({p.name})",
        f"{config.num_gpu_blocks} blocks × {config.block_size} tokens",
        f"max_num_seqs {config.max_num_seqs}",
        f"budget {config.max_num_batched_tokens} tokens/step",
        mode,
    ]
    if config.enable_prefix_caching:
        parts.append("prefix caching")
    return " · ".join(parts)


def state_caption(config: EngineConfig, device: str, *, preset: str | None, step: int, manual_requests: int = 0) -> str:
    """The caption of a figure of engine state (block grids, queues, block tables): nothing timed in it."""
    workload = f"preset {preset}" if preset else "no preset"
    extra = f" + {manual_requests} request(s) added by hand" if manual_requests else ""
    return (
        f"pykv engine state after step {step} ({workload}{extra}) on {device} · model {config.model} · "
        f"{config_summary(config)}"
    )


def sweep_caption(
    base: EngineConfig,
    device: str,
    *,
    workload: str,
    workload_args: dict,
    axis: str,
    values: Iterable[int],
    series: Iterable[str],
    runs: int,
    total: int,
    policies: Iterable[str] = ("last",),
    repeats: int = 1,
    measure: str = DEFAULT_MEASURE,
    load: str | None = None,
) -> str:
    """The caption of a sweep chart: its series, each named with its release ("recompute, vLLM 0.6.3 (V0)"); times
    measured on ``device`` on ``measure``'s clock, the median of ``repeats``, under ``load``; PCIe times modelled."""
    sized = ", ".join(f"{k}={v}" for k, v in sorted(workload_args.items()))
    stopped = f" (stopped: {runs} of {total} points)" if runs < total else f" ({runs} points)"
    policies = tuple(policies)
    by = "" if policies == ("last",) else f" × victim policies {', '.join(policies)}"
    clock = MEASURES[measure] + (f", median of {repeats} repeats" if repeats > 1 else "")
    return (
        f"pykv sweep of {axis} over {', '.join(map(str, values))} × series {'; '.join(series)}{by}{stopped} · "
        f"workload {workload} ({sized}) · model {base.model} · base: {config_summary(base)} · "
        f"times measured on {device} ({clock}{f'; load average {load}' if load else ''}); counts are the same "
        "every repeat; PCIe times modelled, not measured"
    )


def sweep_costs_note(base: EngineConfig, device: str) -> str:
    """The line under the Sweep page's charts (and the sweep pack's): how each preemption's cost is measured, on which
    clocks, and the PCIe model."""
    return (
        f"Recompute's cost is the forward time of its re-prefill, shared out by token count; swap's is the "
        f"measured copy-out + copy-in. Each is timed twice: on the wall clock, and as the CPU time of the engine "
        f"thread (time.thread_time), which leaves out the time a busy machine made the thread wait; the charts "
        f"show the clock chosen above them, the CSVs have both. Counts (preemptions, recomputed tokens, swapped "
        f"blocks and bytes) are the same on any machine and every repeat. Modelled PCIe: bytes / "
        f"({PCIE_GBPS['gen4']:g} GB/s Gen4, {PCIE_GBPS['gen5']:g} GB/s Gen5) + {base.pcie_copy_overhead_us:g} µs "
        f"per copy issued. Measured on {device}."
    )


def sweep_command(
    base: EngineConfig,
    *,
    workload: str,
    workload_args: dict,
    axis: str,
    values: Iterable[int],
    modes: Iterable[str],
    seed: int = 0,
    policies: Iterable[str] = ("last",),
    repeats: int | None = None,
    across_releases: bool = False,
) -> str:
    """``python -m pykv sweep ...`` that runs the same sweep headless (the Sweep page has no URL). ``modes`` as the
    CLI writes them (``recompute@v0.33`` for a series on another release); the release is always spelled out, since
    the sweep's default release is not the engine's."""
    args = ["python -m pykv sweep", "--workload", workload]
    if "n" in workload_args:
        args += ["--num-requests", str(workload_args["n"])]
    if "max_tokens" in workload_args:
        args += ["--max-tokens", str(workload_args["max_tokens"])]
    args += [SWEEP_AXIS_FLAGS[axis], ",".join(map(str, values)), "--modes", ",".join(modes)]
    if tuple(policies) != ("last",):
        args += ["--policies", ",".join(policies)]
    if across_releases:
        args.append("--compare-across-releases")
    if repeats is not None:
        args += ["--repeats", str(repeats)]
    defaults = EngineConfig()
    for name, value in base.model_dump().items():
        if name == "seed" or (value == getattr(defaults, name) and name != "vllm_profile"):  # --seed: below
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            args.append(flag if value else f"--no-{flag[2:]}")
        else:
            args += [flag, knob_text(value)]
    if seed:
        args += ["--seed", str(seed)]
    return args[0] + " " + " ".join(shlex.quote(a) for a in args[1:])
