"""How much memory a KV pool may take, checked before any block or tensor is allocated: a bad pool size
gets a message with the largest allowed value instead of a MemoryError (or the machine's OOM killer)."""

from __future__ import annotations

import os

import torch

from pykv.border.config import MAX_POOL_BLOCKS, ConfigError, EngineConfig, show_value
from pykv.border.limits import MAX_KV_BYTES, MAX_KV_BYTES_ENV


def cpu_pool_blocks(config: EngineConfig, bytes_per_block: int) -> int:
    """Blocks of the CPU pool: V0's swap pool (num_cpu_blocks, else swap_space GiB), or V1's offloading tier
    (num_offload_blocks, else kv_offloading_size GiB); at most one of them is set (each belongs to one profile)."""
    if config.num_offload_blocks is not None:
        return config.num_offload_blocks
    if config.kv_offloading_size is not None:
        blocks = int(config.kv_offloading_size * 2**30) // bytes_per_block
        if blocks < 1:
            raise ConfigError(
                "kv_offloading_size",
                f"kv_offloading_size={config.kv_offloading_size:g} GiB is under "
                f"one KV block ({bytes_per_block:,} B on this model): give at least "
                f"{bytes_per_block / 2**30:.3g} GiB, or set num_offload_blocks.",
            )
        return blocks
    if config.num_cpu_blocks is not None:
        return config.num_cpu_blocks
    return int(config.swap_space * 2**30) // bytes_per_block


def check_pool_budget(config: EngineConfig, bytes_per_block: int, num_cpu_blocks: int) -> None:
    """Each pool's bytes within its budget (see ``kv_pool_budget``), and its blocks within the table's cap;
    the message gives the largest number of blocks allowed."""
    gpu_budget = kv_pool_budget(config.device)
    largest = min(MAX_POOL_BLOCKS, gpu_budget // bytes_per_block)
    if config.num_gpu_blocks > largest:
        raise ConfigError(
            "num_gpu_blocks",
            f"num_gpu_blocks={config.num_gpu_blocks} needs {_gib(config.num_gpu_blocks * bytes_per_block)} "
            f"of KV cache ({bytes_per_block} B per block) but the device pool's budget is "
            f"{_gib(gpu_budget)}: use at most {largest} blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
        )
    cpu_budget = kv_pool_budget("cpu")
    largest = min(MAX_POOL_BLOCKS, cpu_budget // bytes_per_block)
    if num_cpu_blocks > largest:
        if config.num_offload_blocks is not None or config.kv_offloading_size is not None:
            name = "num_offload_blocks" if config.num_offload_blocks is not None else "kv_offloading_size"
            raise ConfigError(
                name,
                f"The CPU offloading tier of {num_cpu_blocks} blocks needs "
                f"{_gib(num_cpu_blocks * bytes_per_block)} ({bytes_per_block} B per block) but its budget is "
                f"{_gib(cpu_budget)}: use at most {largest} blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
            )
        if config.num_cpu_blocks is None:
            most = largest * bytes_per_block / 2**30
            raise ConfigError(
                "swap_space",
                f"swap_space={config.swap_space:g} GiB makes {num_cpu_blocks} CPU blocks but at most {largest} "
                f"fit ({_gib(cpu_budget)} budget, {bytes_per_block} B per block): set swap_space to at most "
                f"{most:.3f} or set num_cpu_blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
            )
        raise ConfigError(
            "num_cpu_blocks",
            f"num_cpu_blocks={num_cpu_blocks} needs {_gib(num_cpu_blocks * bytes_per_block)} of CPU swap "
            f"pool ({bytes_per_block} B per block) but its budget is {_gib(cpu_budget)}: use at most "
            f"{largest} blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
        )


def kv_pool_budget(device: str) -> int:
    """Bytes one KV pool on ``device`` may take: ``$PYKV_MAX_KV_BYTES`` where set; else on CUDA the GPU's free
    memory, and in RAM the smaller of ``MAX_KV_BYTES`` (8 GiB) and half the memory available now."""
    text = os.environ.get(MAX_KV_BYTES_ENV, "").strip()
    if text:
        if not text.isdigit() or len(text) > 20 or int(text) < 1:
            raise ConfigError(None, f"{MAX_KV_BYTES_ENV} must be a whole number of bytes, got {show_value(text)}.")
        return int(text)
    if device.startswith("cuda"):
        return torch.cuda.mem_get_info(device)[0]
    available = _available_ram()
    return MAX_KV_BYTES if available is None else min(MAX_KV_BYTES, available // 2)


def _available_ram() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), in bytes; None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _gib(num_bytes: float) -> str:
    return f"{num_bytes / 2**30:.3g} GiB" if num_bytes >= 2**30 else f"{num_bytes / 2**20:.3g} MiB"
