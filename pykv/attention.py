"""The one place the model calls attention: store this step's K/V, then attend over the paged cache.

A backend is a set of three functions with the signatures of ``kernels.reference``; swapping the
backend swaps the kernels and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from kernels import reference


@dataclass(frozen=True)
class AttentionBackend:
    name: str
    store_kv: Callable[..., None]
    prefill: Callable[..., torch.Tensor]
    decode: Callable[..., torch.Tensor]


TORCH_BACKEND = AttentionBackend(
    "torch", reference.store_kv, reference.paged_prefill_attention, reference.paged_decode_attention
)


def resolve_backend(name: str, device: str) -> AttentionBackend:
    """``"auto"`` is Triton on CUDA and the torch reference on CPU."""
    if name in ("torch", "auto"):
        return TORCH_BACKEND
    raise ValueError(
        f"attention_backend={name!r} is not available yet: the Triton kernels are not built. "
        "Use attention_backend='torch' or 'auto'."
    )


@dataclass(frozen=True)
class AttentionMetadata:
    """How this step's flat token batch maps onto requests and cache slots.

    Tokens of each scheduled request are contiguous, in batch order::

        query rows: [ req0 chunk | req1 chunk | req2 ... ]
        query_start_loc = [0, n0, n0 + n1, ...]
    """

    slot_mapping: torch.Tensor  # (num_tokens,) int64
    block_tables: torch.Tensor  # (num_seqs, max_blocks_per_seq) int32, padded with 0 past each table
    seq_lens: torch.Tensor  # (num_seqs,) int32: cached tokens after this step
    query_start_loc: torch.Tensor  # (num_seqs + 1,) int32
    is_all_decode: bool  # every request has exactly one query token


def paged_attention(
    backend: AttentionBackend,
    q: torch.Tensor,  # (num_tokens, num_heads, head_dim)
    k: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
    v: torch.Tensor,
    k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
    v_cache: torch.Tensor,
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:
    backend.store_kv(k, v, k_cache, v_cache, meta.slot_mapping)
    if meta.is_all_decode:
        return backend.decode(q, k_cache, v_cache, meta.block_tables, meta.seq_lens, scale)
    return backend.prefill(q, k_cache, v_cache, meta.block_tables, meta.seq_lens, meta.query_start_loc, scale)
