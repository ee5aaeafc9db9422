"""Random paged-attention inputs shaped like the engine's, for the kernel tests and benchmarks.

The cache is a per-layer view into a pool shaped like ``CacheEngine.gpu_cache``
(``(num_layers, 2, num_blocks, block_size, num_kv_heads, head_dim)``), so the kernels see the
engine's strides. Every slot no request owns is NaN, blocks are handed out in a random order, and
each block table is padded with 0 past its end (block 0 may belong to someone else), so a kernel
that reads a slot it should not turns its output into NaN or garbage and fails the comparison.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

import torch


@dataclass(frozen=True)
class PagedCase:
    query: torch.Tensor  # (num_tokens, num_heads, head_dim)
    k_cache: torch.Tensor  # (num_blocks, block_size, num_kv_heads, head_dim), a view into `pool`
    v_cache: torch.Tensor
    block_tables: torch.Tensor  # (num_seqs, max_blocks_per_seq) int32, padded with 0
    seq_lens: torch.Tensor  # (num_seqs,) int32
    query_start_loc: torch.Tensor  # (num_seqs + 1,) int32
    scale: float
    pool: torch.Tensor  # (num_layers, 2, num_blocks, block_size, num_kv_heads, head_dim)


def make_paged_case(
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    block_size: int,
    *,
    seq_lens: Sequence[int] | None = None,
    query_lens: Sequence[int] | None = None,
    num_seqs: int = 1,
    max_len: int = 32,
    decode: bool = False,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
    seed: int = 0,
    spare_blocks: int = 2,
    extra_table_width: int = 1,
) -> PagedCase:
    """``seq_lens`` default to random lengths in 1..max_len; ``query_lens`` to 1 (decode) or random."""
    rng = random.Random(seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    if seq_lens is None:
        seq_lens = [rng.randint(1, max_len) for _ in range(num_seqs)]
    seq_lens = list(seq_lens)
    if query_lens is None:
        query_lens = [1 if decode else rng.randint(1, n) for n in seq_lens]
    query_lens = list(query_lens)
    assert all(1 <= q <= n for q, n in zip(query_lens, seq_lens)), "need 1 <= query_len <= seq_len"
    blocks_per_seq = [-(-n // block_size) for n in seq_lens]
    num_blocks = sum(blocks_per_seq) + spare_blocks
    order = list(range(num_blocks))
    rng.shuffle(order)  # physical blocks handed out in random order; the spare ones stay NaN
    width = max(blocks_per_seq) + extra_table_width
    tables = torch.zeros(len(seq_lens), width, dtype=torch.int32)
    pool = torch.full((2, 2, num_blocks, block_size, num_kv_heads, head_dim), float("nan"), dtype=dtype, device=device)
    layer = 1  # a view with a non-zero offset into the pool, like gpu_cache[layer, 0]
    k_cache, v_cache = pool[layer, 0], pool[layer, 1]
    for i, (n, nb) in enumerate(zip(seq_lens, blocks_per_seq)):
        table = [order.pop() for _ in range(nb)]
        tables[i, :nb] = torch.tensor(table, dtype=torch.int32)
        pos = torch.arange(n, device=device)
        slots = torch.tensor(table, device=device)[pos // block_size] * block_size + pos % block_size
        for cache in (k_cache, v_cache):
            rows = torch.randn(n, num_kv_heads, head_dim, generator=gen, device=device)
            cache.view(-1, num_kv_heads, head_dim)[slots] = rows.to(dtype)
    num_tokens = sum(query_lens)
    query = torch.randn(num_tokens, num_heads, head_dim, generator=gen, device=device).to(dtype)
    starts = [0]
    for q in query_lens:
        starts.append(starts[-1] + q)
    return PagedCase(
        query=query,
        k_cache=k_cache,
        v_cache=v_cache,
        block_tables=tables.to(device),
        seq_lens=torch.tensor(seq_lens, dtype=torch.int32, device=device),
        query_start_loc=torch.tensor(starts, dtype=torch.int32, device=device),
        scale=head_dim**-0.5,
        pool=pool,
    )


def kernel_test_device() -> str:
    """Where kernel tests run: CUDA when this process compiles the kernels for it, else CPU (interpreter)."""
    from pykv_kernels.triton_utils import interpreted

    return "cuda" if torch.cuda.is_available() and not interpreted() else "cpu"
