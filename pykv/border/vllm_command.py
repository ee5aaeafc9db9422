"""An EngineConfig as the vLLM release its profile follows would take it: the ``vllm serve`` command
line and the ``LLM(...)`` keyword arguments, knob by knob, and the knobs with no vLLM flag.

Every flag below was read in that release's own ``vllm/engine/arg_utils.py`` (``EngineArgs`` and
``EngineArgs.add_cli_args``); a knob the release lacks is said to be missing, never given a made-up
flag. A border type: it imports only the config table and the profiles.

    0.6.3.post1  --block-size (choices 8, 16, 32), --enable-prefix-caching (store_true),
                 --enable-chunked-prefill [true|false] (StoreBoolean), --swap-space, --preemption-mode,
                 --device, --num-gpu-blocks-override, --max-num-seqs, --max-num-batched-tokens, ...
    0.10.2       the V1 flags; booleans are BooleanOptionalAction (--no-enable-prefix-caching); --block-size
                 takes 1, 8, 16, 32, 64, 128 (config/cache.py BlockSize); --preemption-mode still parses
                 but setting it leaves V1 (EngineArgs._is_v1_supported_oracle); no --device, no --watermark
    0.33.0       as 0.10.2, --block-size any positive int, plus --watermark (config/scheduler.py); no
                 --swap-space or --preemption-mode
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Literal, Optional

from pykv.border.config import EngineConfig, knobs
from pykv.border.vllm_profiles import VllmProfile

Status = Literal["flag", "unset", "release", "not_in_release", "pykv_only"]
Style = Literal["value", "store_true", "store_boolean", "bool_optional"]
SHIPPED_MODEL_PATH = "pykv/assets/tiny"  # model="tiny": the shipped Hugging Face Llama checkpoint folder


@dataclass(frozen=True)
class Flag:
    """How one release spells a knob: ``vllm serve`` flag, ``EngineArgs`` field and argparse style."""

    flag: str
    kwarg: str
    style: Style = "value"
    choices: Optional[tuple] = None  # values the release's argparse accepts (None: any)


@dataclass(frozen=True)
class KnobMapping:
    """One knob of a config under one release."""

    knob: str
    value: Any  # pykv's value
    status: Status  # flag: mapped; unset: None, the release's own default applies; release: vllm_profile;
    # not_in_release: vLLM has no such flag in this release; pykv_only: no vLLM flag in any release
    args: tuple[str, ...] = ()  # the command-line words, e.g. ("--block-size", "16")
    kwargs: Optional[dict] = None  # the LLM(...) keyword argument(s)
    note: str = ""


def _flags(*entries: tuple[str, Flag]) -> dict[str, Flag]:
    return dict(entries)


_COMMON = (
    ("dtype", Flag("--dtype", "dtype")),
    ("num_gpu_blocks", Flag("--num-gpu-blocks-override", "num_gpu_blocks_override")),
    ("gpu_memory_utilization", Flag("--gpu-memory-utilization", "gpu_memory_utilization")),
    ("max_num_seqs", Flag("--max-num-seqs", "max_num_seqs")),
    ("max_num_batched_tokens", Flag("--max-num-batched-tokens", "max_num_batched_tokens")),
    ("max_model_len", Flag("--max-model-len", "max_model_len")),
    ("seed", Flag("--seed", "seed")),
)
# Per release (the profile's name): the knobs it has a flag for.
RELEASE_FLAGS: dict[str, dict[str, Flag]] = {
    "v0.6": _flags(*_COMMON,
                   ("device", Flag("--device", "device", choices=("auto", "cuda", "neuron", "cpu", "openvino", "tpu",
                                                                  "xpu"))),
                   ("block_size", Flag("--block-size", "block_size", choices=(8, 16, 32))),
                   ("swap_space", Flag("--swap-space", "swap_space")),
                   ("preemption_mode", Flag("--preemption-mode", "preemption_mode")),
                   ("enable_prefix_caching", Flag("--enable-prefix-caching", "enable_prefix_caching", "store_true")),
                   ("enable_chunked_prefill", Flag("--enable-chunked-prefill", "enable_chunked_prefill",
                                                   "store_boolean"))),
    "v0.10": _flags(*_COMMON,
                    ("block_size", Flag("--block-size", "block_size", choices=(1, 8, 16, 32, 64, 128))),
                    ("enable_prefix_caching", Flag("--enable-prefix-caching", "enable_prefix_caching",
                                                   "bool_optional")),
                    ("enable_chunked_prefill", Flag("--enable-chunked-prefill", "enable_chunked_prefill",
                                                    "bool_optional"))),
    "v0.33": _flags(*_COMMON,
                    ("block_size", Flag("--block-size", "block_size")),
                    ("watermark", Flag("--watermark", "watermark")),
                    ("kv_offloading_size", Flag("--kv-offloading-size", "kv_offloading_size")),
                    ("enable_prefix_caching", Flag("--enable-prefix-caching", "enable_prefix_caching",
                                                   "bool_optional")),
                    ("enable_chunked_prefill", Flag("--enable-chunked-prefill", "enable_chunked_prefill",
                                                    "bool_optional"))),
}
# Knobs vLLM has in some release but not in this one: why there is no flag.
NOT_IN_RELEASE: dict[str, dict[str, str]] = {
    "v0.6": {
        "watermark": "no flag in vLLM 0.6.3.post1: its block manager keeps its constructor default, 0.01 "
                     "(core/block_manager.py BlockSpaceManager)",
        "kv_offloading_size": "not in vLLM 0.6.3.post1: the CPU offloading tier came with V1 (0.11+)",
    },
    "v0.10": {
        "device": "no flag in vLLM 0.10.2: the platform is detected (DeviceConfig(current_platform.device_type))",
        "swap_space": "not in this profile: V1 never swaps (0.10.2 still parses --swap-space; V1 leaves it unused)",
        "preemption_mode": "not in this profile: V1 always recomputes (0.10.2 parses --preemption-mode, but setting "
                           "it leaves V1: EngineArgs._is_v1_supported_oracle)",
        "watermark": "no flag in vLLM 0.10.2 (the watermark came back in later V1 releases)",
        "kv_offloading_size": "no flag in vLLM 0.10.2: --kv-offloading-size came in 0.11",
    },
    "v0.33": {
        "device": "no flag in vLLM 0.33.0: the platform is detected (DeviceConfig(current_platform.device_type))",
        "swap_space": "no flag in vLLM 0.33.0: V1 never swaps",
        "preemption_mode": "no flag in vLLM 0.33.0: V1 always recomputes",
    },
}
# Knobs no vLLM release has: pykv's own.
PYKV_ONLY: dict[str, str] = {
    "attention_backend": "pykv's torch attention or its Triton kernels (vLLM 0.33.0's --attention-backend chooses "
                         "among vLLM's own backends, a different list)",
    "num_cpu_blocks": "the CPU pool in blocks; vLLM sizes it from --swap-space only",
    "num_offload_blocks": "the CPU offloading tier in blocks; vLLM (0.11+) sizes it from --kv-offloading-size "
                          "only",
    "swap_fallback": "what pykv does when the CPU pool is full",
    "swap_copy": "how pykv issues the swap copies",
    "pcie_bandwidth_gbps": "the modelled PCIe figure (pykv's model, not measured)",
    "pcie_copy_overhead_us": "the modelled PCIe figure (pykv's model, not measured)",
    "max_preemptions_without_progress": "pykv's livelock guard",
    "log_stats_interval": "pykv's stats lines by step count (vLLM logs on a timer)",
    "log_stats_interval_s": "pykv's stats lines by engine time (vLLM's timer is fixed: 5 s in V0, 10 s in V1)",
}


def _words(flag: Flag, value: Any) -> tuple[str, ...]:
    if flag.style == "value":
        return (flag.flag, str(value))
    if flag.style == "store_true":
        return (flag.flag,) if value else ()
    if flag.style == "store_boolean":
        return (flag.flag,) if value else (flag.flag, "false")
    return (flag.flag if value else "--no-" + flag.flag[2:],)


def _mapped(name: str, value: Any, flag: Flag, p: VllmProfile) -> KnobMapping:
    note = ""
    if name == "device" and value.startswith("cuda:"):
        value, note = "cuda", f"{value}: pick the GPU with CUDA_VISIBLE_DEVICES"
    if name == "model" and value == "tiny":
        value, note = SHIPPED_MODEL_PATH, "the shipped model's folder (a Hugging Face Llama checkpoint)"
    if name == "preemption_mode" and value == "auto":
        return KnobMapping(name, value, "unset", note="unset: vLLM 0.6.3.post1 then picks by its own rule, as "
                                                      "pykv's auto does")
    if flag.choices is not None and value not in flag.choices:
        note = (f"vLLM {p.release} accepts only {', '.join(map(str, flag.choices))}; pykv's {value} has no exact "
                "equivalent there")
    if name == "enable_prefix_caching" and flag.style == "store_true" and not value:
        note = "off: the release's default (no flag)"
    return KnobMapping(name, value, "flag", _words(flag, value), {flag.kwarg: value}, note)


def _swap_space(config: EngineConfig, flag: Flag, bytes_per_block: Optional[int]) -> KnobMapping:
    """V0's --swap-space, in GiB; from num_cpu_blocks (which overrides it in pykv) when the block's bytes are known,
    so that vLLM's ``swap_space * GiB // block bytes`` gives the same CPU pool."""
    if config.num_cpu_blocks is None:
        return _mapped("swap_space", config.swap_space, flag, config.profile)
    if not bytes_per_block:
        return KnobMapping("swap_space", config.swap_space, "unset", note=(
            f"set it to the bytes of num_cpu_blocks={config.num_cpu_blocks} blocks on the model, in GiB (pykv's "
            "num_cpu_blocks overrides swap_space; a block's bytes depend on the model)"))
    gib = config.num_cpu_blocks * bytes_per_block / 2**30
    return KnobMapping("swap_space", config.swap_space, "flag", (flag.flag, repr(gib)), {flag.kwarg: gib},
                       f"from num_cpu_blocks={config.num_cpu_blocks} x {bytes_per_block:,} bytes per block "
                       "(pykv's num_cpu_blocks overrides swap_space)")


def _fitted_max_model_len(flag: Flag, p: VllmProfile, fitted: int) -> KnobMapping:
    how = ("--max-model-len -1 fits it the same way" if p.name == "v0.33"
           else f"without it vLLM {p.release} would refuse to start, the model's context not fitting the pool")
    return KnobMapping("max_model_len", None, "flag", (flag.flag, str(fitted)), {flag.kwarg: fitted},
                       f"none: pykv fitted it to the pool ({fitted} tokens, the length the engine ran with); {how}")


def _victim(value: str) -> KnobMapping:
    """vLLM has one knob for this, --scheduling-policy (fcfs | priority) in every profile's release."""
    if value == "last":
        return KnobMapping("preemption_victim", value, "unset", note="unset: the default policy (fcfs) preempts the "
                                                                     "last running request")
    if value == "priority":
        return KnobMapping("preemption_victim", value, "flag", ("--scheduling-policy", "priority"),
                           {"scheduling_policy": "priority"}, "priority scheduling: the victim is the worst "
                           "(priority, arrival)")
    return KnobMapping("preemption_victim", value, "pykv_only", note=f"{value}: no vLLM scheduling policy picks "
                       "victims this way (" + ("a proposal to vLLM" if value == "lcf" else "SGLang's retract order")
                       + "); vLLM would preempt the last running request")


def knob_mappings(config: EngineConfig, bytes_per_block: Optional[int] = None,
                  max_model_len: Optional[int] = None) -> list[KnobMapping]:
    """Every knob of ``config`` in table order, as its profile's vLLM release would take it. ``bytes_per_block``
    (the KV bytes of one block on the config's model) turns num_cpu_blocks into V0's --swap-space;
    ``max_model_len`` (the length the engine ran with) is passed on when the config leaves it unset."""
    p = config.profile
    flags, missing = RELEASE_FLAGS[p.name], NOT_IN_RELEASE[p.name]
    rows = []
    for spec in knobs():
        name, value = spec.name, getattr(config, spec.name)
        if name == "vllm_profile":
            rows.append(KnobMapping(name, value, "release", note=f"pip install vllm=={p.release} ({p.engine})"))
        elif name == "model":
            rows.append(_mapped(name, value, Flag("--model", "model"), p))
        elif name == "num_gpu_blocks" and config.gpu_memory_utilization is not None:
            rows.append(KnobMapping(name, value, "unset", note="unused: gpu_memory_utilization sizes the pool"))
        elif name == "preemption_victim":
            rows.append(_victim(value))
        elif name == "swap_space" and name in flags:
            rows.append(_swap_space(config, flags[name], bytes_per_block))
        elif name == "max_model_len" and value is None and max_model_len is not None:
            rows.append(_fitted_max_model_len(flags[name], p, max_model_len))
        elif name in flags and value is None:
            rows.append(KnobMapping(name, value, "unset", note=f"none: vLLM {p.release}'s own default applies"))
        elif name in flags:
            rows.append(_mapped(name, value, flags[name], p))
        elif name in missing:
            rows.append(KnobMapping(name, value, "not_in_release", note=missing[name]))
        else:
            rows.append(KnobMapping(name, value, "pykv_only", note=PYKV_ONLY[name]))
    return rows


def serve_command(config: EngineConfig, bytes_per_block: Optional[int] = None,
                  max_model_len: Optional[int] = None) -> str:
    """``vllm serve MODEL --flag value ...`` for the release the config's profile follows (shell-quoted)."""
    rows = knob_mappings(config, bytes_per_block, max_model_len)
    model = next(r for r in rows if r.knob == "model").args[1]
    words = ["vllm", "serve", model] + [w for r in rows if r.knob != "model" for w in r.args]
    return " ".join(shlex.quote(w) for w in words)


def llm_kwargs(config: EngineConfig, bytes_per_block: Optional[int] = None,
               max_model_len: Optional[int] = None) -> dict[str, Any]:
    """The ``LLM(...)`` keyword arguments (``EngineArgs`` fields) for the config's release, in table order."""
    out: dict[str, Any] = {}
    for r in knob_mappings(config, bytes_per_block, max_model_len):
        out |= r.kwargs or {}
    return out


def llm_call(config: EngineConfig, bytes_per_block: Optional[int] = None, max_model_len: Optional[int] = None) -> str:
    """``LLM(model=..., ...)`` as Python source, one argument a line."""
    args = "".join(f"\n    {k}={v!r}," for k, v in llm_kwargs(config, bytes_per_block, max_model_len).items())
    return f"from vllm import LLM\n\nllm = LLM({args}\n)"
