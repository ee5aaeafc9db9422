"""What-if: a replay run to completion as planned and again with each of the first fixes of the tuning order
applied (from the first finding's step on), side by side: preemptions, recomputed tokens, the recompute tax
(measured here) and throughput on a named GPU and model (modelled from the schedule the lab really ran,
``pykv.gpu_model``)."""

from __future__ import annotations

from dataclasses import dataclass

from pykv.border.config import EngineConfig
from pykv.border.workload import Workload
from pykv.bridge import Diagnosis
from pykv.bridge.findings.fixes import STEPS
from pykv.engine.model.loader import LoadedModel
from pykv.gpu_model import Target
from pykv.gpu_model.schedule import run_totals
from pykv.lab.completed_run import run_to_completion
from pykv.lab.server_replay import ReplayPlan

MAX_REPLAY_STEPS = 5_000
# The first tuning step each finding's fix names (pykv.bridge.findings.fixes.STEPS order).
STEP_FOR_FINDING = {
    "preemption_storm": "gpu_memory",
    "swap_space_exhausted": "swap",
    "swap_never_used": "gpu_memory",
    "max_num_seqs_above_capacity": "max_num_seqs",
    "max_model_len_exceeds_kv": "gpu_memory",
    "prefix_cache_not_hitting": "prefix_caching",
    "prefix_hit_inflated_by_recompute": "gpu_memory",
    "chunked_prefill_rethrash": "gpu_memory",
}


@dataclass(frozen=True)
class LabFix:
    step: str  # a tuning step (pykv.bridge.findings.fixes.STEPS)
    label: str  # what it does in the lab, for the page and the CLI
    changes: dict


def lab_fix(step: str, config: EngineConfig) -> LabFix | None:
    """The lab's knob change for one tuning step under the config's profile; None where the profile has none."""
    if step == "gpu_memory":
        blocks = max(config.num_gpu_blocks + 1, round(config.num_gpu_blocks * 1.25))
        return LabFix(
            step,
            f"25% more KV blocks ({config.num_gpu_blocks} -> {blocks}), as a higher --gpu-memory-utilization gives",
            {"num_gpu_blocks": blocks},
        )
    if step == "max_num_seqs" and config.max_num_seqs > 1:
        seqs = max(1, config.max_num_seqs // 2)
        return LabFix(
            step, f"half the running batch (--max-num-seqs {config.max_num_seqs} -> {seqs})", {"max_num_seqs": seqs}
        )
    if step == "swap" and config.profile.swaps:
        cpu = max(2 * (config.num_cpu_blocks or 0), config.num_gpu_blocks)
        return LabFix(
            step,
            f"a CPU swap pool of {cpu} blocks (--swap-space)",
            {"num_cpu_blocks": cpu, "preemption_mode": config.preemption_mode},
        )
    if step == "swap" and config.profile.has_kv_offloading:
        return LabFix(
            step,
            f"a CPU offloading tier of {2 * config.num_gpu_blocks} blocks (--kv-offloading-size)",
            {"num_offload_blocks": 2 * config.num_gpu_blocks},
        )
    if step == "prefix_caching" and not config.enable_prefix_caching:
        return LabFix(step, "prefix caching on (--enable-prefix-caching)", {"enable_prefix_caching": True})
    if step == "chunked_prefill" and not config.enable_chunked_prefill:
        return LabFix(step, "chunked prefill on (--enable-chunked-prefill)", {"enable_chunked_prefill": True})
    return None


def suggested_fixes(diagnosis: Diagnosis, plan: ReplayPlan, count: int = 2) -> list[LabFix]:
    """The lab's fixes in the tuning order, from the first finding's step on (more KV memory without a finding):
    the first ``count`` the profile has."""
    first = next((STEP_FOR_FINDING[f.id] for f in diagnosis.findings if f.id in STEP_FOR_FINDING), "gpu_memory")
    steps = STEPS[STEPS.index(first) :]
    fixes = [fix for step in steps for fix in [lab_fix(step, plan.config)] if fix is not None]
    return fixes[:count]


@dataclass(frozen=True)
class ReplayOutcome:
    steps: int
    done: bool
    preemptions: int
    recomputed_tokens: int
    recompute_tax: float  # measured, 0-1
    modelled_s: float  # the whole run on the target (modelled)
    modelled_tokens_per_s: float
    target_label: str


# The rows a what-if is shown in (the CLI and the page): label, ReplayOutcome field, format.
WHAT_IF_ROWS = (
    ("preemptions", "preemptions", "{:,}"),
    ("recomputed tokens", "recomputed_tokens", "{:,}"),
    ("recompute tax", "recompute_tax", "{:.1%}"),
    ("output tokens/s", "modelled_tokens_per_s", "{:,.0f}"),
    ("engine steps", "steps", "{:,}"),
)


def run_replay(config: EngineConfig, workload: Workload, loaded: LoadedModel, target: Target) -> ReplayOutcome:
    run = run_to_completion(config, workload, loaded, max_steps=MAX_REPLAY_STEPS)
    totals = run.totals()
    modelled = run_totals(target.estimate(), run.reports, config.block_size, totals.output_tokens)
    return ReplayOutcome(
        totals.steps,
        run.done,
        totals.preemptions,
        totals.recomputed_tokens,
        totals.recompute_tax,
        modelled.modelled_s,
        modelled.tokens_per_s,
        f"modelled {target.gpu} + {target.model}",
    )


def what_if(plan: ReplayPlan, fixes: list[LabFix], loaded: LoadedModel, target: Target) -> list[ReplayOutcome]:
    """The replay as planned, then with each fix applied (one at a time)."""
    return [
        run_replay(plan.config.replace(**changes), plan.workload, loaded, target)
        for changes in [{}] + [fix.changes for fix in fixes]
    ]
