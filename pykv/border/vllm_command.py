"""An EngineConfig as the vLLM release its profile follows would take it: the ``vllm serve`` command
line and the ``LLM(...)`` keyword arguments, knob by knob, and the knobs with no vLLM flag. Each knob's
flag per release lives on the knob (``EngineConfig``'s table, ``pykv.border.vllm_flags``). A border type: it
imports only the config table and the profiles.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Literal

from pykv.border.config import EngineConfig, knobs
from pykv.border.preemption_choices import VICTIM_POLICIES
from pykv.border.vllm_flags import Flag
from pykv.border.vllm_profiles import MaxModelLenCheck, VllmProfile

Status = Literal["flag", "unset", "release", "not_in_release", "pykv_only"]
SHIPPED_MODEL_PATH = "pykv/assets/tiny"  # model="tiny": the shipped Hugging Face Llama checkpoint folder
# vLLM 0.33.0 sizes its offloading tier as cpu_bytes_to_use // (a block's bytes rounded up to a memory page)
# (v1/kv_offload/cpu/spec.py CPUOffloadingSpec.__init__, BLOCK_SIZE_ALIGNMENT = mmap.PAGESIZE: 4 KiB on x86-64)
OFFLOAD_BLOCK_ALIGNMENT = 4096
# Why a run on a CPU is given the GPU command where the release's CPU build differs (VllmProfile.cpu_build_differs):
# vLLM 0.6.3.post1 on a CPU would not run the same engine.
V0_CPU_NOTE = (
    "pykv ran on cpu; this is the command for a GPU. vLLM 0.6.3.post1's CPU executor turns chunked "
    "prefill and prefix caching off (executor/cpu_executor.py _verify_and_get_scheduler_config, "
    "_verify_and_get_cache_config) and its CPU worker allocates no swap space (worker/cpu_worker.py "
    "CPUWorker.determine_num_available_blocks returns 0 CPU blocks), so --device cpu would not "
    "reproduce this run"
)


@dataclass(frozen=True)
class KnobMapping:
    """One knob of a config under one release."""

    knob: str
    value: Any  # pykv's value (a CPU pool set in blocks: its size in the flag's unit, GiB)
    status: Status  # flag: mapped; unset: None, the release's own default applies; release: vllm_profile;
    # not_in_release: vLLM has no such flag in this release; pykv_only: no vLLM flag in any release
    args: tuple[str, ...] = ()  # the command-line words, e.g. ("--block-size", "16")
    kwargs: dict | None = None  # the LLM(...) keyword argument(s)
    note: str = ""


def _words(flag: Flag, value: Any) -> tuple[str, ...]:
    if flag.style == "value":
        return (flag.flag, str(value))
    if flag.style == "store_true":
        return (flag.flag,) if value else ()
    if flag.style == "store_boolean":
        return (flag.flag,) if value else (flag.flag, "false")
    return (flag.flag if value else "--no-" + flag.flag[2:],)


def _mapped(name: str, value: Any, flag: Flag, p: VllmProfile) -> KnobMapping:
    """``value`` is pykv's (what the table's value column shows); the flag may be given another (``given``)."""
    note, given = "", value
    if name == "device" and value.startswith("cuda:"):
        given, note = "cuda", f"{value}: pick the GPU with CUDA_VISIBLE_DEVICES"
    if name == "device" and value == "cpu" and p.cpu_build_differs:
        given, note = "cuda", V0_CPU_NOTE
    if name == "model" and value == "tiny":
        given, note = SHIPPED_MODEL_PATH, "the shipped model's folder (a Hugging Face Llama checkpoint)"
    if name == "preemption_mode" and value == "auto":
        return KnobMapping(
            name, value, "unset", note=f"unset: vLLM {p.release} then picks by its own rule, as pykv's auto does"
        )
    if flag.choices is not None and given not in flag.choices:
        note = (
            f"vLLM {p.release} accepts only {', '.join(map(str, flag.choices))}; pykv's {given} has no exact "
            "equivalent there"
        )
    if name == "num_gpu_blocks" and p.null_block:
        note = f"{value - 1} usable: vLLM {p.release} keeps block 0 back as the null block, as pykv does"
    if name == "enable_prefix_caching" and flag.style == "store_true" and not value:
        note = "off: the release's default (no flag)"
    return KnobMapping(name, value, "flag", _words(flag, given), {flag.kwarg: given}, note)


def _swap_space(config: EngineConfig, flag: Flag, bytes_per_block: int | None) -> KnobMapping:
    """V0's --swap-space, in GiB; from num_cpu_blocks (which overrides it in pykv) when the block's bytes are known,
    so that vLLM's ``swap_space * GiB // block bytes`` gives the same CPU pool."""
    if config.num_cpu_blocks is None:
        return _mapped("swap_space", config.swap_space, flag, config.profile)
    if not bytes_per_block:
        return KnobMapping(
            "swap_space",
            None,
            "unset",
            note=(
                f"set it to the bytes of num_cpu_blocks={config.num_cpu_blocks} blocks on the model, in GiB (pykv's "
                "num_cpu_blocks overrides swap_space; a block's bytes depend on the model)"
            ),
        )
    gib = config.num_cpu_blocks * bytes_per_block / 2**30
    return KnobMapping(
        "swap_space",
        gib,  # the pool the engine ran with, not the swap_space num_cpu_blocks overrode (0.0 beside the flag misled)
        "flag",
        (flag.flag, repr(gib)),
        {flag.kwarg: gib},
        f"from num_cpu_blocks={config.num_cpu_blocks} x {bytes_per_block:,} bytes per block "
        "(pykv's num_cpu_blocks overrides swap_space)",
    )


def _offloading_size(config: EngineConfig, flag: Flag, bytes_per_block: int | None) -> KnobMapping:
    """--kv-offloading-size in GiB; from num_offload_blocks (which overrides it in pykv) when the block's bytes are
    known, so that vLLM's ``cpu_bytes_to_use // aligned block bytes`` gives the same tier. Only a release where the
    size alone turns the tier on has the flag here (0.33.0); 0.11.1 to 0.12 would also need
    --kv-offloading-backend native."""
    blocks = config.num_offload_blocks
    if blocks is None:
        value = config.kv_offloading_size
        if value is None:
            return KnobMapping("kv_offloading_size", value, "unset", note="none: no offloading tier (vLLM's default)")
        return _mapped("kv_offloading_size", value, flag, config.profile)
    if not bytes_per_block:
        return KnobMapping(
            "kv_offloading_size",
            None,
            "unset",
            note=(
                f"set it to the bytes of num_offload_blocks={blocks} blocks on the model, in GiB (pykv's "
                "num_offload_blocks overrides kv_offloading_size; a block's bytes depend on the model)"
            ),
        )
    aligned = -(-bytes_per_block // OFFLOAD_BLOCK_ALIGNMENT) * OFFLOAD_BLOCK_ALIGNMENT
    gib = blocks * aligned / 2**30
    padded = "" if aligned == bytes_per_block else f", rounded up to {aligned:,} as vLLM pads each block to a page"
    return KnobMapping(
        "kv_offloading_size",
        gib,
        "flag",
        (flag.flag, repr(gib)),
        {flag.kwarg: gib},
        f"from num_offload_blocks={blocks} x {bytes_per_block:,} bytes per block{padded} (pykv's "
        f"num_offload_blocks overrides kv_offloading_size); vLLM {config.profile.release} needs only "
        "the size (0.11.1 to 0.12 also need --kv-offloading-backend native)",
    )


def command_caveat(config: EngineConfig) -> str | None:
    """What to know before running the command: None when it reproduces the run as it stands."""
    if config.profile.cpu_build_differs and config.device == "cpu":
        return V0_CPU_NOTE[0].upper() + V0_CPU_NOTE[1:] + "."
    return None


def release_pins(config: EngineConfig) -> list[KnobMapping]:
    """Flags no knob sets that the run still needs: where the release's default is not what pykv models. vLLM 0.33.0
    schedules asynchronously by default (config/vllm.py VllmConfig: async_scheduling None becomes True unless
    something is incompatible); pykv models the synchronous Scheduler."""
    if not config.profile.async_scheduling_default:
        return []
    return [
        KnobMapping(
            "async_scheduling",
            False,
            "flag",
            ("--no-async-scheduling",),
            {"async_scheduling": False},
            f"no pykv knob: vLLM {config.profile.release} schedules the next step while the last one runs "
            "(AsyncScheduler) unless told not to; pykv models the synchronous Scheduler",
        )
    ]


def _fitted_max_model_len(flag: Flag, p: VllmProfile, fitted: int) -> KnobMapping:
    if p.auto_fits_max_model_len:
        how = "--max-model-len -1 fits it the same way"
    elif p.max_model_len_check is MaxModelLenCheck.PROFILED_MEMORY:  # not --num-gpu-blocks-override (0.10.2)
        how = (
            f"without it vLLM {p.release} would start with the model's context, its start-up check reading the "
            "profiled GPU memory, not the override, and a request could outgrow the pool"
        )
    else:
        how = f"without it vLLM {p.release} would refuse to start, the model's context not fitting the pool"
    return KnobMapping(
        "max_model_len",
        None,
        "flag",
        (flag.flag, str(fitted)),
        {flag.kwarg: fitted},
        f"none: pykv fitted it to the pool ({fitted} tokens, the length the engine ran with); {how}",
    )


def _victim(value: str, flag: Flag) -> KnobMapping:
    """vLLM has one knob for this, --scheduling-policy (fcfs | priority) in every profile's release."""
    policy = VICTIM_POLICIES[value]
    if policy.vllm_scheduling_policy == "fcfs":
        return KnobMapping(
            "preemption_victim",
            value,
            "unset",
            note="unset: the default policy (fcfs) preempts the last running request",
        )
    if policy.vllm_scheduling_policy is not None:
        return KnobMapping(
            "preemption_victim",
            value,
            "flag",
            (flag.flag, policy.vllm_scheduling_policy),
            {flag.kwarg: policy.vllm_scheduling_policy},
            f"{policy.vllm_scheduling_policy} scheduling: the victim is the {policy.label}",
        )
    return KnobMapping(
        "preemption_victim",
        value,
        "pykv_only",
        note=f"{value}: no vLLM scheduling policy picks "
        f"victims this way ({policy.not_vllm}); vLLM would preempt the last running request",
    )


def knob_mappings(
    config: EngineConfig, bytes_per_block: int | None = None, max_model_len: int | None = None
) -> list[KnobMapping]:
    """Every knob of ``config`` in table order, as its profile's vLLM release would take it. ``bytes_per_block``
    (the KV bytes of one block on the config's model) turns num_cpu_blocks into V0's --swap-space;
    (and num_offload_blocks into --kv-offloading-size); ``max_model_len`` (the length the engine ran with) is passed
    on when the config leaves it unset."""
    p = config.profile
    rows = []
    for spec in knobs():
        name, value, flag = spec.name, getattr(config, spec.name), spec.vllm.flag_in(p.name)
        if spec.vllm.release:
            rows.append(KnobMapping(name, value, "release", note=f"pip install vllm=={p.release} ({p.engine})"))
        elif spec.vllm.pykv_only is not None:
            rows.append(KnobMapping(name, value, "pykv_only", note=spec.vllm.pykv_only))
        elif flag is None:
            rows.append(KnobMapping(name, value, "not_in_release", note=spec.vllm.missing_in(p.name) or ""))
        elif name == "num_gpu_blocks" and config.gpu_memory_utilization is not None:
            rows.append(KnobMapping(name, value, "unset", note="unused: gpu_memory_utilization sizes the pool"))
        elif name == "preemption_victim":
            rows.append(_victim(value, flag))
        elif name == "swap_space":
            rows.append(_swap_space(config, flag, bytes_per_block))
        elif name == "kv_offloading_size":
            rows.append(_offloading_size(config, flag, bytes_per_block))
        elif name == "max_model_len" and value is None and max_model_len is not None:
            rows.append(_fitted_max_model_len(flag, p, max_model_len))
        elif value is None:
            rows.append(KnobMapping(name, value, "unset", note=f"none: vLLM {p.release}'s own default applies"))
        else:
            rows.append(_mapped(name, value, flag, p))
    return rows


def serve_command(config: EngineConfig, bytes_per_block: int | None = None, max_model_len: int | None = None) -> str:
    """``vllm serve MODEL --flag value ...`` for the release the config's profile follows (shell-quoted)."""
    rows = knob_mappings(config, bytes_per_block, max_model_len) + release_pins(config)
    model = next(r for r in rows if r.knob == "model").args[1]
    words = ["vllm", "serve", model] + [w for r in rows if r.knob != "model" for w in r.args]
    return " ".join(shlex.quote(w) for w in words)


def llm_kwargs(
    config: EngineConfig, bytes_per_block: int | None = None, max_model_len: int | None = None
) -> dict[str, Any]:
    """The ``LLM(...)`` keyword arguments (``EngineArgs`` fields) for the config's release, in table order."""
    out: dict[str, Any] = {}
    for r in knob_mappings(config, bytes_per_block, max_model_len) + release_pins(config):
        out |= r.kwargs or {}
    return out


def llm_call(config: EngineConfig, bytes_per_block: int | None = None, max_model_len: int | None = None) -> str:
    """``LLM(model=..., ...)`` as Python source, one argument a line."""
    args = "".join(f"\n    {k}={v!r}," for k, v in llm_kwargs(config, bytes_per_block, max_model_len).items())
    return f"from vllm import LLM\n\nllm = LLM({args}\n)"
