"""The KV pool in the target's units: GiB of the target model's KV <-> blocks of ``block_size`` tokens.

bytes per block = block_size x KV bytes per token (the target model's, on one GPU of its TP group)
blocks          = floor(GiB x 2^30 / bytes per block)
"""

from __future__ import annotations

from pykv.gpu_model.estimate import Estimate

MAX_POOL_GIB = 1_000_000  # a petabyte of KV: past any GPU's (and 1e308 GiB in bytes is no float)


def bytes_per_block(est: Estimate, block_size: int) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a whole number of at least 1, got {block_size!r}.")
    return block_size * est.kv_bytes_per_token_per_gpu


def blocks_for_gib(est: Estimate, gib: float, block_size: int) -> int:
    """Blocks a pool of ``gib`` GiB of the target's KV holds; ValueError if it is under one block."""
    per_block = bytes_per_block(est, block_size)
    if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not 0 < gib <= MAX_POOL_GIB:  # NaN fails too
        raise ValueError(f"The pool must be a positive number of GiB, at most {MAX_POOL_GIB:,}; got {gib!r}.")
    blocks = int(gib * 2**30 // per_block)
    if blocks < 1:
        raise ValueError(
            f"{gib:g} GiB is less than one block of {est.shape.name} KV on {est.gpu.name} at block size "
            f"{block_size} ({per_block / 2**20:g} MiB); give at least {per_block / 2**30:.4g} GiB."
        )
    return blocks


def gib_for_blocks(est: Estimate, blocks: int, block_size: int) -> float:
    return blocks * bytes_per_block(est, block_size) / 2**30
