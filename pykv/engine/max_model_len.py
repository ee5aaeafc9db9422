"""max_model_len against the KV pool, at engine start-up.

vLLM refuses to start when one request of ``max_model_len`` tokens cannot fit the KV cache (V0:
``vllm/worker/worker.py``, ``raise_if_cache_size_invalid``, on the block count after
``--num-gpu-blocks-override``; 0.33: ``vllm/v1/core/kv_cache_planning.py``, ``get_kv_cache_configs`` and
``check_enough_kv_cache_memory``, on the override's bytes). 0.10.2 checks only the profiled memory
(``vllm/v1/core/kv_cache_utils.py`` ``get_kv_cache_config`` calls ``check_enough_kv_cache_memory`` with the
available memory; the override replaces the block count afterwards, in ``get_num_blocks``), so a small
``--num-gpu-blocks-override`` starts whatever ``max_model_len`` is, and a request longer than the pool is
preempted again and again (pykv's livelock guard ends it). The lab shrinks pools far below the model's
context, so when ``max_model_len`` is left unset pykv fits it to the pool in every profile, as vLLM 0.33
does with ``--max-model-len -1`` (``_auto_fit_max_model_len``), and says so. A ``max_model_len`` set larger
than the pool is refused with the release's message, except where the release's check reads the profiled memory
and not ``num_gpu_blocks`` (``VllmProfile.max_model_len_check``: 0.10.2), which starts, as 0.10.2 does, and says
what will happen. Without chunked prefill every release also refuses a
token budget smaller than max_model_len (``SchedulerConfig._verify_args`` / ``verify_max_model_len``): an
unset max_model_len is fitted to the budget too, a set one is refused.

V1 plans against the usable blocks, all but its null block (0.33.0 ``v1/core/kv_cache_planning.py``,
``get_kv_cache_configs`` and ``check_enough_kv_cache_memory``, take one block's bytes off before the
auto-fit and the check), so pykv's V1 profiles fit to ``num_gpu_blocks - 1`` blocks.
"""

from __future__ import annotations

from pykv.border.config import EngineConfig
from pykv.border.units import fmt_bytes
from pykv.border.vllm_profiles import MaxModelLenCheck


def fitted_because(config: EngineConfig, max_model_len: int, model_max: int) -> str:
    """Why max_model_len is below the model's context, for messages that quote it ("" if it is not)."""
    if config.max_model_len is not None or max_model_len >= model_max:
        return ""
    if not config.enable_chunked_prefill and max_model_len == config.max_num_batched_tokens:
        return " (fitted to max_num_batched_tokens: chunked prefill is off)"
    usable = "usable " if config.profile.null_block else ""
    return f" (fitted to the KV pool: {config.usable_gpu_blocks} {usable}blocks x {config.block_size} tokens)"


def _pool_words(config: EngineConfig) -> str:
    """ "24 blocks", or under V1 "23 usable blocks of 24: block 0 is the null block"."""
    if not config.profile.null_block:
        return f"{config.num_gpu_blocks} blocks"
    return f"{config.usable_gpu_blocks} usable blocks of {config.num_gpu_blocks}: block 0 is the null block"


def checks_the_override(config: EngineConfig) -> bool:
    """Whether the release's start-up check sees the pool pykv runs: every release with a pool sized from memory;
    with num_gpu_blocks (--num-gpu-blocks-override) V0 and 0.33.0 check it, 0.10.2 checks the profiled memory."""
    return (
        config.gpu_memory_utilization is not None
        or config.profile.max_model_len_check is not MaxModelLenCheck.PROFILED_MEMORY
    )


def _no_auto_fit(config: EngineConfig, model_max: int) -> str:
    p = config.profile
    if p.auto_fits_max_model_len:
        return ""
    if not checks_the_override(config):
        return (
            f" [pykv: vLLM {p.release} has no auto-fit, and with --num-gpu-blocks-override its start-up check "
            f"reads the profiled GPU memory, not the override: it would start with max_model_len {model_max}, and "
            "a request longer than the pool would be preempted again and again]"
        )
    return f" [pykv: vLLM {p.release} has no auto-fit; it would refuse to start]"


def fit_max_model_len(config: EngineConfig, model_max: int, bytes_per_block: int) -> tuple[int, list[str]]:
    """The max_model_len in force and the start-up log lines that explain it; ValueError if it cannot fit."""
    p = config.profile
    capacity = config.usable_gpu_blocks * config.block_size
    available = fmt_bytes(config.usable_gpu_blocks * bytes_per_block)
    if config.max_model_len is None:
        fitted = min(model_max, capacity)
        lines = []
        if fitted < model_max:
            lines.append(
                f"Auto-fit max_model_len: reduced from {model_max} to {fitted} to fit in available KV cache "
                f"memory ({available}, {_pool_words(config)})" + _no_auto_fit(config, model_max)
            )
        if not config.enable_chunked_prefill and config.max_num_batched_tokens < fitted:
            fitted = config.max_num_batched_tokens
            lines.append(
                f"[pykv] max_model_len fitted to max_num_batched_tokens ({fitted}): without chunked prefill "
                "vLLM refuses a budget smaller than max_model_len (SchedulerConfig._verify_args)"
            )
        return fitted, lines
    wanted = min(config.max_model_len, model_max)
    if not config.enable_chunked_prefill and config.max_num_batched_tokens < wanted:
        raise ValueError(
            f"max_num_batched_tokens ({config.max_num_batched_tokens}) is smaller than max_model_len ({wanted}). "
            "This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject "
            "longer sequences. Raise max_num_batched_tokens, lower max_model_len, or enable chunked prefill."
        )
    capped = (
        []
        if wanted == config.max_model_len
        else [
            f"[pykv] max_model_len {config.max_model_len} is above the model's limit (max_position_embeddings "
            f"{model_max}): capped to {wanted}"
        ]
    )
    if wanted <= capacity:
        return wanted, capped
    if not checks_the_override(config):
        return wanted, capped + [
            f"[pykv] max_model_len {wanted} is over the pool ({capacity} tokens in {_pool_words(config)}): vLLM "
            f"{p.release} starts anyway (its start-up check reads the profiled GPU memory, not "
            "--num-gpu-blocks-override), and a request that outgrows the pool is preempted again and again, until "
            "pykv's livelock guard aborts it"
        ]
    if p.max_model_len_check is MaxModelLenCheck.BLOCKS:
        raise ValueError(
            f"The model's max seq len ({wanted}) is larger than the maximum number of tokens that can be stored in KV "
            f"cache ({capacity}). Raise num_gpu_blocks or lower max_model_len (vLLM {p.release}'s start-up check)."
        )
    needed = fmt_bytes(-(-wanted // config.block_size) * bytes_per_block)
    raise ValueError(
        f"To serve at least one request with the model's max seq len ({wanted}), ({needed} KV cache is needed, "
        f"which is larger than the available KV cache memory ({available}). Based on the available memory, the "
        f"estimated maximum model length is {capacity}. Raise num_gpu_blocks or lower max_model_len "
        f"(vLLM {p.release}'s start-up check)."
    )
