"""EngineConfig: the one table of the engine's knobs, named as vLLM names its flags.

Each field says, in one place, its type (a ``Literal`` *is* the list of choices), default, bounds,
help text and where it is exposed. The CLI flags (``pykv.cli.main``), the sidebar widgets and the URL
parameters (``pykv.ui``) and the lesson ``config`` rules (``pykv.lessons``) are all derived from
``knobs()``: add a field here and it appears everywhere its ``expose`` says, with no other edit.

Validation is pydantic's (strict types: no silent ``int("3")`` or ``True`` as 1), and every error
is a ``ConfigError``: one line that names the field and says what to change.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pykv.border.knob_table import EVERYWHERE, Knob, knob, read_knobs
from pykv.border.pcie import DEFAULT_PCIE_GBPS, PCIE_COPY_OVERHEAD_US
from pykv.border.preemption_choices import POLICY_LABELS, VictimPolicyName
from pykv.border.vllm_flags import (
    OFFLOADING_RELEASES,
    PROFILE_NAMES,
    Flag,
    per_release,
    pykv_only,
    same_flag,
    the_release,
)
from pykv.border.vllm_profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    PreemptionMode,
    VllmProfile,
    VllmProfileName,
    profile,
    profile_names,
)

AttentionBackendName = Literal["auto", "torch", "triton"]
DtypeName = Literal["float32", "float16", "bfloat16"]
SwapFallback = Literal["recompute", "abort"]
SwapCopy = Literal["batched", "per_block"]

SWAPPING = profile_names(lambda p: p.swaps)  # knobs only releases that swap have (vLLM V0)
OFFLOADING = profile_names(lambda p: p.has_kv_offloading)  # V1's CPU offloading tier (OFFLOADING_RELEASES)
WATERMARKED = profile_names(lambda p: p.default_watermark is not None)  # releases with a watermark
# The most blocks a pool may have, whatever their size: each block also costs Python objects (BlockPool). The engine
# checks the pool's bytes against a memory budget too (pykv.border.limits.MAX_KV_BYTES), where the block size is known.
MAX_POOL_BLOCKS = 1_000_000


class ConfigError(ValueError):
    """A config value that cannot be used. ``field`` is the knob it is about (None: several)."""

    def __init__(self, field: str | None, message: str) -> None:
        self.field = field
        super().__init__(message)


class EngineConfig(BaseModel):
    """Everything that shapes an engine. Frozen: rebuild the engine to change it."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid", allow_inf_nan=False)

    vllm_profile: VllmProfileName = knob(
        DEFAULT_PROFILE,
        "the vLLM release whose rules the engine follows: " + "; ".join(p.label() for p in PROFILES.values()),
        expose=EVERYWHERE,
        widget="segmented",  # one short name per release: every release side by side, however many
        vllm=the_release(),
    )
    model: str = knob(
        "tiny",
        "'tiny' (the shipped model) or a local Hugging Face Llama/Qwen2 checkpoint folder",
        expose=("cli",),
        not_in_lessons="the model comes from the app (the shipped one by default)",
        app_owned=True,
        max_length=4096,
        vllm=same_flag("--model", "model"),
    )
    device: str = knob(
        "cpu",
        "where the model and the device KV pool live: cpu, cuda or cuda:N",
        expose=("cli", "sidebar", "url"),
        options="devices",
        not_in_lessons="the device comes from the app",
        app_owned=True,
        max_length=32,
        vllm=per_release(
            {
                "v0.6": Flag("--device", "device", choices=("auto", "cuda", "neuron", "cpu", "openvino", "tpu", "xpu")),
                "v0.10": "no flag in vLLM 0.10.2: the platform is detected "
                "(DeviceConfig(current_platform.device_type))",
                "v0.32": "no flag in vLLM 0.32.0: the platform is detected "
                "(DeviceConfig(current_platform.device_type))",
                "v0.33": "no flag in vLLM 0.33.0: the platform is detected "
                "(DeviceConfig(current_platform.device_type))",
            }
        ),
    )
    attention_backend: AttentionBackendName = knob(
        "auto",
        "torch = plain torch attention (SDPA, batch-invariant); triton = the project's kernels on every layer "
        "(on CPU through Triton's interpreter: ~50 ms storm steps, its CPU launch configuration); auto = triton on "
        "CUDA; on CPU, in the lab's Playground and Lessons, triton on the first layer (whose launches the kernel "
        "panel shows) and torch on the others (~20 ms steps, the same tokens), torch where runs go to completion "
        "(Sweep, CLI, benchmarks)",
        expose=("cli", "sidebar", "url"),
        not_in_lessons="the attention backend comes from the app",
        app_owned=True,
        vllm=pykv_only(
            "pykv's torch attention or its Triton kernels (vLLM 0.33.0's --attention-backend "
            "chooses among vLLM's own backends, a different list)"
        ),
    )
    dtype: DtypeName = knob(
        "float32",
        "weights and KV cache dtype",
        expose=("cli",),
        not_in_lessons="the dtype comes from the app",
        app_owned=True,
        vllm=same_flag("--dtype", "dtype"),
    )
    block_size: int = knob(
        16,
        "tokens per KV block (vLLM's default is 16)",
        expose=EVERYWHERE,
        ge=1,
        le=256,
        vllm=per_release(
            {
                "v0.6": Flag("--block-size", "block_size", choices=(8, 16, 32)),
                "v0.10": Flag("--block-size", "block_size", choices=(1, 8, 16, 32, 64, 128)),
                "v0.32": Flag("--block-size", "block_size"),
                "v0.33": Flag("--block-size", "block_size"),
            }
        ),
    )
    num_gpu_blocks: int = knob(
        64,
        "physical KV blocks in the device pool; shrink it to force preemption",
        expose=EVERYWHERE,
        ge=1,
        le=MAX_POOL_BLOCKS,
        app_max=512,
        widget="slider",
        vllm=same_flag("--num-gpu-blocks-override", "num_gpu_blocks_override"),
    )
    gpu_memory_utilization: float | None = knob(
        None,
        "CUDA only: size the device pool from this share of GPU memory instead of num_gpu_blocks",
        expose=("cli",),
        gt=0,
        le=1,
        not_in_lessons="size the pool with num_gpu_blocks so the lesson replays the same on any machine",
        vllm=same_flag("--gpu-memory-utilization", "gpu_memory_utilization"),
    )
    swap_space: float = knob(
        0.0,
        "CPU swap pool in GiB (vLLM's --swap-space); num_cpu_blocks overrides it",
        ge=0,
        le=64,
        profiles=SWAPPING,
        vllm=per_release(
            {
                "v0.6": Flag("--swap-space", "swap_space"),
                "v0.10": "not in this profile: V1 never swaps (0.10.2 still parses --swap-space; only its V0 engine "
                "reads it, which a non-default --preemption-mode falls back to: EngineArgs._is_v1_supported_oracle)",
                "v0.32": "no flag in vLLM 0.32.0: V1 never swaps",
                "v0.33": "no flag in vLLM 0.33.0: V1 never swaps",
            }
        ),
    )
    num_cpu_blocks: int | None = knob(
        None,
        "CPU swap pool in blocks; none = sized from swap_space; 0 = a pool with no room, so every swap "
        "falls back to recompute",
        expose=EVERYWHERE,
        ge=0,
        le=MAX_POOL_BLOCKS,
        app_max=4096,
        profiles=SWAPPING,
        vllm=pykv_only("the CPU pool in blocks; vLLM sizes it from --swap-space only"),
    )
    max_num_seqs: int = knob(
        8,
        "most requests in the running batch at once",
        expose=EVERYWHERE,
        ge=1,
        le=1024,
        app_max=256,
        vllm=same_flag("--max-num-seqs", "max_num_seqs"),
    )
    max_num_batched_tokens: int = knob(
        256,
        "token budget of one step (prefill chunks + decodes)",
        expose=EVERYWHERE,
        ge=1,
        le=65536,
        app_max=8192,
        vllm=same_flag("--max-num-batched-tokens", "max_num_batched_tokens"),
    )
    max_model_len: int | None = knob(
        None,
        "longest sequence (prompt + output) a request may reach; none = the model's context length",
        ge=1,
        le=1_048_576,
        vllm=same_flag("--max-model-len", "max_model_len"),
    )
    preemption_mode: PreemptionMode = knob(
        "recompute",
        "what happens to a victim when the pool is full: recompute (drop its KV, re-prefill later), swap "
        "(copy its blocks to the CPU pool; v0.6 only) or auto (V0's rule; v0.6 only)",
        expose=EVERYWHERE,
        vllm=per_release(
            {
                "v0.6": Flag("--preemption-mode", "preemption_mode"),
                "v0.10": "not in this profile: V1 always recomputes (0.10.2 parses --preemption-mode, but a "
                "non-default value falls back to the V0 engine: EngineArgs._is_v1_supported_oracle)",
                "v0.32": "no flag in vLLM 0.32.0: V1 always recomputes",
                "v0.33": "no flag in vLLM 0.33.0: V1 always recomputes",
            }
        ),
    )
    preemption_victim: VictimPolicyName = knob(
        "last",
        "which running request is preempted: " + "; ".join(f"{n}: {p}" for n, p in POLICY_LABELS.items()),
        expose=EVERYWHERE,
        vllm=same_flag("--scheduling-policy", "scheduling_policy"),
    )
    kv_offloading_size: float | None = knob(
        None,
        f"V1's CPU offloading tier in GiB (vLLM's --kv-offloading-size, {OFFLOADING_RELEASES}): each "
        "request's full prompt blocks are stored to CPU once computed and loaded back instead of recomputed "
        "(generated tokens are always recomputed: 0.33 offloads prompts only); num_offload_blocks overrides it",
        gt=0,
        le=64,
        profiles=OFFLOADING,
        vllm=per_release(
            {
                "v0.6": "not in vLLM 0.6.3.post1: the CPU offloading tier came with V1",
                "v0.10": f"no flag in vLLM 0.10.2: the tier came later ({OFFLOADING_RELEASES})",
                "v0.32": Flag("--kv-offloading-size", "kv_offloading_size"),
                "v0.33": Flag("--kv-offloading-size", "kv_offloading_size"),
            }
        ),
    )
    num_offload_blocks: int | None = knob(
        None,
        "the CPU offloading tier in blocks; none = sized from kv_offloading_size (none there too: no tier)",
        expose=EVERYWHERE,
        ge=1,
        le=MAX_POOL_BLOCKS,
        app_max=4096,
        profiles=OFFLOADING,
        vllm=pykv_only("the CPU offloading tier in blocks; vLLM sizes it from --kv-offloading-size only"),
    )
    enable_prefix_caching: bool = knob(
        False,
        "reuse full blocks whose token prefix was computed before (hash kept after free)",
        expose=EVERYWHERE,
        vllm=per_release(
            {
                "v0.6": Flag("--enable-prefix-caching", "enable_prefix_caching", "store_true"),
                "v0.10": Flag("--enable-prefix-caching", "enable_prefix_caching", "bool_optional"),
                "v0.32": Flag("--enable-prefix-caching", "enable_prefix_caching", "bool_optional"),
                "v0.33": Flag("--enable-prefix-caching", "enable_prefix_caching", "bool_optional"),
            }
        ),
    )
    enable_chunked_prefill: bool = knob(
        True,
        "split long prompts over several steps to fit the token budget",
        expose=EVERYWHERE,
        vllm=per_release(
            {
                "v0.6": Flag("--enable-chunked-prefill", "enable_chunked_prefill", "store_boolean"),
                "v0.10": Flag("--enable-chunked-prefill", "enable_chunked_prefill", "bool_optional"),
                "v0.32": Flag("--enable-chunked-prefill", "enable_chunked_prefill", "bool_optional"),
                "v0.33": Flag("--enable-chunked-prefill", "enable_chunked_prefill", "bool_optional"),
            }
        ),
    )
    seed: int = knob(
        0,
        "seeds sampling and the workload presets",
        expose=("cli",),
        not_in_lessons="set the lesson's seed in the front matter (seed: N); it seeds the workload and the engine",
        ge=0,
        lt=2**63,
        vllm=same_flag("--seed", "seed"),
    )
    # Swap (vLLM V0): what to do when the CPU pool is full, how to copy, free room kept on swap-in.
    swap_fallback: SwapFallback = knob(
        "recompute",
        "when the CPU pool is full: recompute the victim instead, or abort it with vLLM V0's message",
        profiles=SWAPPING,
        vllm=pykv_only("what pykv does when the CPU pool is full"),
    )
    swap_copy: SwapCopy = knob(
        "batched",
        "one copy per swap (batched) or one per block (per_block)",
        profiles=SWAPPING,
        vllm=pykv_only("how pykv issues the swap copies"),
    )
    watermark: float | None = knob(
        None,
        "share of the device pool an admission must leave free; none = the profile's (V0: 0.01 on every "
        "admission and swap-in; V1, where it has one: 0, on admissions while something runs)",
        ge=0,
        lt=1,
        profiles=WATERMARKED,
        vllm=per_release(
            {
                "v0.6": "no flag in vLLM 0.6.3.post1: its block manager keeps its constructor default, 0.01 "
                "(core/block_manager.py BlockSpaceManager)",
                "v0.10": "no flag in vLLM 0.10.2 (the watermark came back in later V1 releases)",
                "v0.32": Flag("--watermark", "watermark"),
                "v0.33": Flag("--watermark", "watermark"),
            }
        ),
    )
    # Modelled PCIe cost of a swap, shown beside the measured one (default: PCIe Gen5 x16, pinned memory).
    pcie_bandwidth_gbps: float = knob(
        DEFAULT_PCIE_GBPS,
        "modelled PCIe bandwidth for swaps, GB/s (not measured)",
        gt=0,
        le=100_000,
        vllm=pykv_only("the modelled PCIe figure (pykv's model, not measured)"),
    )
    pcie_copy_overhead_us: float = knob(
        PCIE_COPY_OVERHEAD_US,
        "modelled fixed cost per copy issued, µs",
        ge=0,
        le=1_000_000,
        vllm=pykv_only("the modelled PCIe figure (pykv's model, not measured)"),
    )
    # Observability and safety.
    max_preemptions_without_progress: int = knob(
        50,
        "abort a request preempted this many times in a row without producing a token (livelock guard)",
        ge=1,
        le=1_000_000,
        vllm=pykv_only("pykv's livelock guard"),
    )
    log_stats_interval: int | None = knob(
        None,
        "steps between vLLM-style stats log lines; none = no stats lines by step count",
        ge=1,
        le=1_000_000,
        vllm=pykv_only("pykv's stats lines by step count (vLLM logs on a timer)"),
    )
    log_stats_interval_s: float | None = knob(
        None,
        "seconds of measured engine time between stats lines, as vLLM's timer (v0.6: 5, V1: 10); none = "
        "no timed stats lines",
        gt=0,
        le=86_400,
        vllm=pykv_only("pykv's stats lines by engine time (vLLM's timer is fixed: 5 s in V0, 10 s in V1)"),
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as e:
            raise _one_line(e) from None
        _check_combination(self)

    def replace(self, **changes: Any) -> "EngineConfig":
        """A copy with some fields changed (validated like a new config)."""
        return type(self)(**(self.model_dump() | changes))

    def with_profile(self, name: str, **changes: Any) -> tuple["EngineConfig", list[str]]:
        """A copy under another vLLM profile (with ``changes``), with the knobs that profile lacks put back to
        their defaults; returns it and the names of those knobs (for a note to the user)."""
        values = self.model_dump() | changes | {"vllm_profile": name}
        modes = PROFILES[name].preemption_modes if name in PROFILES else ()
        reset = {
            spec.name: spec.default
            for spec in knobs()
            if spec.profiles is not None and name not in spec.profiles and values[spec.name] != spec.default
        }
        if modes and values["preemption_mode"] not in modes:
            reset["preemption_mode"] = "recompute"
        return type(self)(**(values | reset)), sorted(reset)

    @property
    def profile(self) -> VllmProfile:
        """The vLLM release this config follows (``pykv.border.vllm_profiles.VllmProfile``)."""
        return profile(self.vllm_profile)

    @property
    def usable_gpu_blocks(self) -> int:
        """The device blocks requests can hold: every one of num_gpu_blocks but V1's null block (block 0)."""
        return self.num_gpu_blocks - self.profile.null_block

    @property
    def effective_watermark(self) -> float:
        """The watermark share in force: the knob, else the profile's default (0 where the release has none)."""
        return self.watermark if self.watermark is not None else (self.profile.default_watermark or 0.0)


def _check_combination(c: EngineConfig) -> None:
    """Rules that tie several fields together; the field named is the one to change."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", c.device):
        raise ConfigError("device", f"device must be 'cpu' or 'cuda' (optionally 'cuda:N'), got {c.device!r}.")
    if c.gpu_memory_utilization is not None and not c.device.startswith("cuda"):
        raise ConfigError(
            "gpu_memory_utilization",
            "gpu_memory_utilization applies to CUDA devices only; on CPU set num_gpu_blocks instead.",
        )
    _check_profile(c)
    if c.max_num_batched_tokens < c.max_num_seqs:  # every release's SchedulerConfig refuses this too
        raise ConfigError(
            "max_num_batched_tokens",
            f"max_num_batched_tokens ({c.max_num_batched_tokens}) must be "
            f"greater than or equal to max_num_seqs ({c.max_num_seqs}), as vLLM requires: raise it or "
            "lower max_num_seqs.",
        )
    if c.log_stats_interval is not None and c.log_stats_interval_s is not None:
        raise ConfigError(
            "log_stats_interval_s", "Set log_stats_interval (steps) or log_stats_interval_s (seconds), not both."
        )
    if c.kv_offloading_size is not None and c.num_offload_blocks is not None:
        raise ConfigError(
            "kv_offloading_size",
            "Set kv_offloading_size (GiB, as vLLM's --kv-offloading-size) or num_offload_blocks (blocks), not both.",
        )
    if c.preemption_mode == "swap" and c.swap_space == 0 and c.num_cpu_blocks is None:
        raise ConfigError(
            "preemption_mode",
            "preemption_mode='swap' needs a CPU swap pool: set swap_space (GiB, as vLLM's --swap-space) or "
            "num_cpu_blocks. (num_cpu_blocks=0 is allowed on purpose: every swap then falls back.)",
        )


def _check_profile(c: EngineConfig) -> None:
    """A knob or a mode the chosen vLLM release does not have is an error that names the profile that has it."""
    p = profile(c.vllm_profile)
    if c.preemption_mode not in p.preemption_modes:
        having = [name for name, q in PROFILES.items() if c.preemption_mode in q.preemption_modes]
        raise ConfigError(
            "preemption_mode",
            f"preemption_mode={c.preemption_mode!r} does not exist in vllm_profile="
            f"{p.name!r} (vLLM {p.release}, {p.engine} always recomputes); it is in vllm_profile="
            f"{having[0]!r} (vLLM {PROFILES[having[0]].release}, {PROFILES[having[0]].engine}).",
        )
    for spec in knobs():
        if spec.profiles is None or p.name in spec.profiles or getattr(c, spec.name) == spec.default:
            continue
        choices = " or ".join(repr(name) for name in spec.profiles)
        raise ConfigError(
            spec.name,
            f"{spec.name} is not a knob of vllm_profile={p.name!r} (vLLM {p.release}); "
            f"use vllm_profile={choices}, or leave {spec.name} at its default.",
        )
    if p.null_block and c.num_gpu_blocks < 2:
        raise ConfigError(
            "num_gpu_blocks",
            f"vLLM {p.release} keeps block 0 back as its null block, so "
            f"num_gpu_blocks={c.num_gpu_blocks} leaves no block for a request; set 2 or more.",
        )
    if p.chunked_prefill_always and not c.enable_chunked_prefill:
        others = " and ".join(repr(n) for n in profile_names(lambda q: not q.chunked_prefill_always))
        raise ConfigError(
            "enable_chunked_prefill",
            f"vLLM {p.release} always chunks prefills (V1's default args force it "
            f"on); enable_chunked_prefill=False exists in vllm_profile={others}.",
        )
    if (
        p.prefix_chunks_whole_blocks
        and c.enable_chunked_prefill
        and c.enable_prefix_caching
        and c.max_num_batched_tokens % c.block_size
    ):
        raise ConfigError(
            "max_num_batched_tokens",
            f"vLLM {p.release} needs max_num_batched_tokens to be a multiple "
            f"of block_size with chunked prefill and prefix caching (got {c.max_num_batched_tokens} and "
            f"{c.block_size}).",
        )


def _one_line(error: ValidationError) -> ConfigError:
    """The first problem of a pydantic error, as one line that names the field and what to change."""
    err = error.errors(include_url=False)[0]
    name = str(err["loc"][0]) if err["loc"] else None
    value, kind, ctx = show_value(err.get("input")), err["type"], err.get("ctx", {})
    if name is not None and name not in EngineConfig.model_fields:  # an unknown field: keep the message short
        name = show_value(name, 60).strip("'")
    if name is None:
        return ConfigError(None, f"The config is not valid: {err['msg']}.")
    if kind == "extra_forbidden":
        return ConfigError(
            name, f"{name!r} is not an EngineConfig field; use one of {', '.join(EngineConfig.model_fields)}."
        )
    spec = knob_named(name)
    if kind == "literal_error":
        return ConfigError(name, f"{name} must be one of {spec.choices}, got {value}.")
    if kind in ("greater_than_equal", "greater_than") and spec.kind == "int" and ctx.get("ge") == 1:
        return ConfigError(name, f"{name} must be a positive integer, got {value}; set it to 1 or more.")
    if kind == "greater_than_equal" and ctx.get("ge") == 0:
        return ConfigError(name, f"{name} cannot be negative (got {value}); use 0 or more.")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return ConfigError(name, f"{name}={value} is out of range: it must lie in {spec.range_text()}.")
    if kind == "string_too_long":
        return ConfigError(name, f"{name} is too long (at most {ctx.get('max_length')} characters), got {value}.")
    if kind == "finite_number":
        return ConfigError(name, f"{name} must be a finite number, got {value}.")
    what = {"int": "an integer", "float": "a number", "bool": "true or false", "text": "text", "choice": "text"}
    optional = " or None" if spec.optional else ""
    kind_name = type(err.get("input")).__name__
    return ConfigError(name, f"{name} must be {what[spec.kind]}{optional}, got {value} ({kind_name}).")


def show_value(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, safe for any input (a 5,000-digit int, a megabyte of text):
    a message quotes what it was given without growing with it."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    if isinstance(value, str) and len(value) > limit:  # no megabyte repr to cut down
        value = value[:limit] + value[-4:]
    elif isinstance(value, (bytes, bytearray)) and len(value) > limit:
        value = bytes(value[:limit]) + bytes(value[-4:])
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__
        text = f"<{type(value).__name__}>"
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: limit - 5] + "…" + text[-4:]


# ---- the table, read by the CLI, the sidebar, the URL and the lesson loader ---------------------------

_KNOBS = read_knobs(EngineConfig, PROFILE_NAMES)


def knobs(exposed_in: str | None = None) -> list[Knob]:
    """Every knob in table order, or those exposed in ``"cli"``, ``"sidebar"``, ``"url"`` or ``"lesson"``."""
    return [k for k in _KNOBS.values() if exposed_in is None or exposed_in in k.expose]


def app_owned_knobs() -> list[Knob]:
    """What the app decides for every engine it builds (model, device, dtype, attention backend)."""
    return [k for k in _KNOBS.values() if k.app_owned]


def knob_named(name: str) -> Knob:
    return _KNOBS[name]
