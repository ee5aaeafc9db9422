"""An engine's KV sizing, computed once from the config and the model's shape before anything is allocated: the
bytes of one block, the device pool and the CPU pool (V0's swap pool or V1's offloading tier). The engine builds its
pools, tensors and cost ledger from it; the app's seat (``pykv.lab.lab.memory_estimate``) charges a session for it.

    bytes_per_block = num_layers x 2 (K, V) x block_size x num_kv_heads x head_dim x dtype bytes
    device pool     = num_gpu_blocks, or (gpu_memory_utilization x total - used) // bytes_per_block on CUDA
    CPU pool        = num_cpu_blocks, else swap_space GiB // bytes_per_block                (V0's swap pool)
                    | num_offload_blocks, else kv_offloading_size GiB // bytes_per_block    (V1's offloading tier)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pykv.border.config import MAX_POOL_BLOCKS, ConfigError, EngineConfig
from pykv.border.limits import MAX_KV_BYTES_ENV
from pykv.border.units import fmt_gib
from pykv.engine.kv.cache_engine import CacheEngine
from pykv.engine.kv.kv_budget import kv_pool_budget
from pykv.engine.model.model import ModelConfig


@dataclass(frozen=True)
class EngineSizing:
    """What an engine's KV cache comes to; at most one of the two CPU pools exists (each belongs to one profile)."""

    bytes_per_block: int  # one block's K and V across every layer
    num_gpu_blocks: int  # the device pool
    num_swap_blocks: int  # V0's CPU swap pool (0: no room: every swap falls back)
    num_offload_blocks: int | None  # V1's CPU offloading tier (None: no tier)

    @property
    def num_cpu_blocks(self) -> int:
        """The CPU pool's blocks: the offloading tier's where there is one, else the swap pool's."""
        return self.num_swap_blocks if self.num_offload_blocks is None else self.num_offload_blocks

    @property
    def kv_bytes(self) -> int:
        """Bytes of both pools."""
        return (self.num_gpu_blocks + self.num_cpu_blocks) * self.bytes_per_block


def engine_sizing(config: EngineConfig, model: ModelConfig) -> EngineSizing:
    """The sizing of an engine on ``config`` and ``model`` (see the module's docstring); ConfigError where a pool
    given in GiB is under one block, ValueError where gpu_memory_utilization leaves no room for one."""
    bytes_per_block = CacheEngine.bytes_per_block(model, config.block_size, config.dtype)
    num_gpu_blocks = config.num_gpu_blocks
    if config.gpu_memory_utilization is not None:
        num_gpu_blocks = _blocks_from_gpu_memory(config, bytes_per_block)
    return EngineSizing(
        bytes_per_block, num_gpu_blocks, _swap_blocks(config, bytes_per_block), _offload_blocks(config, bytes_per_block)
    )


def _blocks_from_gpu_memory(config: EngineConfig, bytes_per_block: int) -> int:
    """vLLM's sizing: the share of GPU memory left for KV after the weights, in whole blocks."""
    assert config.gpu_memory_utilization is not None
    free, total = torch.cuda.mem_get_info(config.device)
    budget = config.gpu_memory_utilization * total - (total - free)
    blocks = min(int(budget // bytes_per_block), MAX_POOL_BLOCKS, kv_pool_budget(config.device) // bytes_per_block)
    if blocks < 1:
        raise ValueError(
            f"gpu_memory_utilization={config.gpu_memory_utilization} leaves no room for one KV block; raise it."
        )
    return blocks


def _swap_blocks(config: EngineConfig, bytes_per_block: int) -> int:
    """V0's swap pool: num_cpu_blocks, else swap_space GiB."""
    if config.num_cpu_blocks is not None:
        return config.num_cpu_blocks
    return int(config.swap_space * 2**30) // bytes_per_block


def _offload_blocks(config: EngineConfig, bytes_per_block: int) -> int | None:
    """V1's offloading tier: num_offload_blocks, else kv_offloading_size GiB; None where neither is set."""
    if config.num_offload_blocks is not None:
        return config.num_offload_blocks
    if config.kv_offloading_size is None:
        return None
    blocks = int(config.kv_offloading_size * 2**30) // bytes_per_block
    if blocks < 1:
        raise ConfigError(
            "kv_offloading_size",
            f"kv_offloading_size={config.kv_offloading_size:g} GiB is under "
            f"one KV block ({bytes_per_block:,} B on this model): give at least "
            f"{bytes_per_block / 2**30:.3g} GiB, or set num_offload_blocks.",
        )
    return blocks


def check_pool_budget(config: EngineConfig, sizing: EngineSizing) -> None:
    """Each pool's bytes within its budget (see ``kv_pool_budget``), and its blocks within the table's cap;
    the message gives the largest number of blocks allowed."""
    bytes_per_block, num_cpu_blocks = sizing.bytes_per_block, sizing.num_cpu_blocks
    gpu_budget = kv_pool_budget(config.device)
    largest = min(MAX_POOL_BLOCKS, gpu_budget // bytes_per_block)
    if sizing.num_gpu_blocks > largest:
        raise ConfigError(
            "num_gpu_blocks",
            f"num_gpu_blocks={sizing.num_gpu_blocks} needs {fmt_gib(sizing.num_gpu_blocks * bytes_per_block)} "
            f"of KV cache ({bytes_per_block} B per block) but the device pool's budget is "
            f"{fmt_gib(gpu_budget)}: use at most {largest} blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
        )
    cpu_budget = kv_pool_budget("cpu")
    largest = min(MAX_POOL_BLOCKS, cpu_budget // bytes_per_block)
    if num_cpu_blocks > largest:
        if sizing.num_offload_blocks is not None:
            name = "num_offload_blocks" if config.num_offload_blocks is not None else "kv_offloading_size"
            raise ConfigError(
                name,
                f"The CPU offloading tier of {num_cpu_blocks} blocks needs "
                f"{fmt_gib(num_cpu_blocks * bytes_per_block)} ({bytes_per_block} B per block) but its budget is "
                f"{fmt_gib(cpu_budget)}: use at most {largest} blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
            )
        if config.num_cpu_blocks is None:
            most = largest * bytes_per_block / 2**30
            raise ConfigError(
                "swap_space",
                f"swap_space={config.swap_space:g} GiB makes {num_cpu_blocks} CPU blocks but at most {largest} "
                f"fit ({fmt_gib(cpu_budget)} budget, {bytes_per_block} B per block): set swap_space to at most "
                f"{most:.3f} or set num_cpu_blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
            )
        raise ConfigError(
            "num_cpu_blocks",
            f"num_cpu_blocks={num_cpu_blocks} needs {fmt_gib(num_cpu_blocks * bytes_per_block)} of CPU swap "
            f"pool ({bytes_per_block} B per block) but its budget is {fmt_gib(cpu_budget)}: use at most "
            f"{largest} blocks (or raise {MAX_KV_BYTES_ENV}, in bytes).",
        )
