"""The real engine's case for a run of pykv's, and why a run cannot be one.

A case is the driver's input (``driver/drive_engine.py``; the oracle's ``Case.to_dict`` format): the scheduler
knobs under vLLM's names and every request as token ids with its arrival step. ``case_for`` builds it from the
config pykv runs, its requests in the order pykv adds them (``pykv.lab.lab_requests.lab_run``) and the
max_model_len pykv fitted, so both engines start from the same limits.

``why_not`` says, in one line, why the real engine cannot run a config (a different engine generation, a policy
or a mode vLLM lacks, a block size its CPU attention refuses, ...); ``caveat`` what to keep in mind where it can
run but the comparison is not like for like (pykv follows a newer release than the one installed). The Lab always
decodes greedily (its requests carry no temperature), as the driver does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pykv.border.config import EngineConfig
from pykv.border.limits import MAX_STEPS
from pykv.border.preemption_choices import VICTIM_POLICIES
from pykv.border.vllm_profiles import PROFILES, VllmProfile, release_key
from pykv.border.workload import WorkloadRequest
from pykv.engine.model.loader import resolve_model_path
from pykv.real_vllm import install

CPU_BLOCK_MULTIPLE = 32  # vLLM's CPU attention takes block sizes that are multiples of 32
CASE_NAME = "playground"
_NOT_RULES = {"name", "release", "summary"}  # a profile's fields that are not rules


def installed_profile() -> VllmProfile:
    """pykv's profile of the release installed (``install.PROFILE``)."""
    return PROFILES[install.PROFILE]


def _engine_words() -> str:
    return f"the real engine here is vLLM {install.RELEASE} ({install.PACKAGE})"


def why_not(config: EngineConfig, requests: Sequence[WorkloadRequest] = ()) -> str | None:
    """Why vLLM's real engine cannot run this config and workload, in one line that says what to change; None
    where it can."""
    p, real = config.profile, installed_profile()
    if p.engine is not real.engine or release_key(p.release) < release_key(real.release):
        return (
            f"pykv follows vLLM {p.release} ({p.engine}) here, and {_engine_words()}, a "
            f"{'different engine' if p.engine is not real.engine else 'later release'}: choose the "
            f"{real.name} profile to compare them."
        )
    if not _is_shipped_model(config.model):
        return (
            f"The real engine runs pykv's shipped model only; this run uses {config.model!r}. Start the app "
            "on its shipped model to compare."
        )
    if config.preemption_mode != "recompute":
        return f"preemption_mode={config.preemption_mode} swaps, and vLLM V1 has no swap: it always recomputes."
    policy = VICTIM_POLICIES[config.preemption_victim]
    if policy.vllm_scheduling_policy is None:
        return (
            f"preemption_victim={policy.name} is {policy.not_vllm}, not vLLM's: vLLM picks its victims as "
            "`last` (fcfs) or `priority` only. Choose one of those to compare."
        )
    if config.block_size % CPU_BLOCK_MULTIPLE:
        return (
            f"vLLM's CPU attention needs a block size that is a multiple of {CPU_BLOCK_MULTIPLE}; this run has "
            f"block_size={config.block_size}: choose 32 or 64 to compare."
        )
    if config.num_offload_blocks is not None or config.kv_offloading_size is not None:
        return "The CPU offloading tier is not driven on the real engine yet: turn it off to compare."
    forked = next((r for r in requests if r.n > 1), None)
    if forked is not None:
        return (
            f"Request {forked.request_id} asks for n={forked.n} sequences: the real engine's driver runs one "
            "sequence a request. Use n=1 to compare."
        )
    return None


def caveat(config: EngineConfig) -> str | None:
    """What to keep in mind where the real engine runs but pykv follows another release; None when pykv follows
    the release installed."""
    p, real = config.profile, installed_profile()
    if p.release == real.release:
        return None
    rules = [f.name for f in dataclasses.fields(VllmProfile) if f.name not in _NOT_RULES]
    differ = [name for name in rules if getattr(p, name) != getattr(real, name)]
    which = f" in {', '.join(differ)}" if differ else ""
    return (
        f"pykv follows vLLM {p.release} here, but {_engine_words()}: their rules differ{which}, so a difference "
        f"below may be the release's. Choose the {real.name} profile to compare like with like."
    )


def runnable_config(config: EngineConfig) -> EngineConfig | None:
    """The nearest config the real engine runs like for like, where knobs alone stand in the way (None where they
    do not, or where nothing needs to change): the installed release's profile, recompute, a vLLM victim policy, no
    offloading tier, and the block size rounded up to a multiple of 32 with the pool's blocks cut to hold about the
    same tokens (the same pressure)."""
    if why_not(config) is None and caveat(config) is None:
        return None
    block_size = min(256, -(-config.block_size // CPU_BLOCK_MULTIPLE) * CPU_BLOCK_MULTIPLE)
    blocks = max(2, round(config.num_gpu_blocks * config.block_size / block_size))
    changes: dict[str, Any] = dict(block_size=block_size, num_gpu_blocks=blocks, preemption_mode="recompute")
    if VICTIM_POLICIES[config.preemption_victim].vllm_scheduling_policy is None:
        changes["preemption_victim"] = "last"
    try:
        fixed, _ = config.replace(num_offload_blocks=None, kv_offloading_size=None).with_profile(
            installed_profile().name, **changes
        )
    except ValueError:
        return None
    return fixed if why_not(fixed) is None and caveat(fixed) is None else None


def shipped_model_dir() -> Path:
    """The shipped model's folder: what the real engine loads (a Hugging Face checkpoint folder)."""
    return resolve_model_path("tiny")


def _is_shipped_model(model: str) -> bool:
    if model == "tiny":
        return True
    try:
        return Path(model).expanduser().resolve() == shipped_model_dir().resolve()
    except (OSError, ValueError):
        return False


def case_for(
    config: EngineConfig, requests: Sequence[WorkloadRequest], max_model_len: int, name: str = CASE_NAME
) -> dict[str, Any]:
    """The driver's case: pykv's knobs under vLLM's names, its requests as token ids (``prompt_token_ids`` set,
    ids given), ``max_model_len`` as pykv runs it. Priorities go only where priority scheduling reads them
    (vLLM refuses a priority under fcfs)."""
    priority = VICTIM_POLICIES[config.preemption_victim].vllm_scheduling_policy == "priority"
    return {
        "name": name,
        "config": {
            "profile": config.vllm_profile,
            "block_size": config.block_size,
            "num_gpu_blocks": config.num_gpu_blocks,
            "max_num_seqs": config.max_num_seqs,
            "max_num_batched_tokens": config.max_num_batched_tokens,
            "max_model_len": max_model_len,
            "enable_chunked_prefill": config.enable_chunked_prefill,
            "enable_prefix_caching": config.enable_prefix_caching,
            "priority_scheduling": priority,
            "watermark": config.watermark,
        },
        "requests": [
            {
                "request_id": r.request_id,
                "prompt_token_ids": list(r.prompt_token_ids or ()),
                "max_tokens": r.max_tokens,
                "arrival_step": r.arrival_step,
                "priority": r.priority if priority else 0,
                "n": r.n,
                "ignore_eos": r.ignore_eos,
            }
            for r in requests
        ],
        "max_steps": MAX_STEPS,
    }
