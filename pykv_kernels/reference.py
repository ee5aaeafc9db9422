"""Torch reference implementations of the paged-attention operations.

These are the ground truth the Triton kernels and ``pykv_kernels.torch_paged`` (the engine's ``torch``
attention backend) are tested against. They favour clarity over speed: einsum, math in fp32.

KV cache layout, per layer::

    k_cache, v_cache: (num_blocks, block_size, num_kv_heads, head_dim)
    slot s  ->  block s // block_size, offset s % block_size

A request's tokens live in the blocks its block table lists, in order; only the first
``seq_len`` slots reached through the table hold data (the rest may be garbage, even NaN).
"""

from __future__ import annotations

import torch


def store_kv(
    key: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
    value: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
    k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,  # (num_tokens,) int, flat slot of each token
) -> None:
    """Write each token's K and V rows into its cache slot (vLLM's reshape_and_cache)."""
    k_cache.view(-1, *k_cache.shape[2:]).index_copy_(0, slot_mapping.long(), key.to(k_cache.dtype))
    v_cache.view(-1, *v_cache.shape[2:]).index_copy_(0, slot_mapping.long(), value.to(v_cache.dtype))


def gather_kv(cache: torch.Tensor, block_table: torch.Tensor, seq_len: int) -> torch.Tensor:
    """The first ``seq_len`` token rows of one request, in order: (seq_len, num_kv_heads, head_dim)."""
    block_size = cache.shape[1]
    num_blocks = -(-seq_len // block_size)
    return cache[block_table[:num_blocks].long()].flatten(0, 1)[:seq_len]


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal attention of the last ``n`` positions of a sequence over all ``L`` of its keys.

    q: (n, num_heads, head_dim); k, v: (L, num_kv_heads, head_dim) -> (n, num_heads, head_dim).
    Query row i sits at position L - n + i and sees keys 0 .. L - n + i.
    """
    n, num_heads, _ = q.shape
    seq_len, num_kv_heads, _ = k.shape
    group = num_heads // num_kv_heads
    k = k.float().repeat_interleave(group, dim=1)  # (L, num_heads, head_dim)
    v = v.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q.float(), k) * scale  # (num_heads, n, L)
    q_pos = torch.arange(seq_len - n, seq_len, device=q.device)[:, None]
    k_pos = torch.arange(seq_len, device=q.device)[None, :]
    scores = scores.masked_fill(k_pos > q_pos, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hqk,khd->qhd", probs, v).to(q.dtype)


def paged_prefill_attention(
    query: torch.Tensor,  # (num_tokens, num_heads, head_dim), requests' chunks back to back
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
    seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache after this step, chunk included
    query_start_loc: torch.Tensor,  # (num_seqs + 1,) offsets of each request's chunk in `query`
    scale: float,
) -> torch.Tensor:
    """Each request's new chunk attends to its cached prefix and causally to itself."""
    out = torch.empty_like(query)
    starts = query_start_loc.tolist()
    for i, seq_len in enumerate(seq_lens.tolist()):
        lo, hi = starts[i], starts[i + 1]
        k = gather_kv(k_cache, block_tables[i], seq_len)
        v = gather_kv(v_cache, block_tables[i], seq_len)
        out[lo:hi] = attend(query[lo:hi], k, v, scale)
    return out


def paged_decode_attention(
    query: torch.Tensor,  # (num_seqs, num_heads, head_dim): one new token per request
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
    seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache, the new one included
    scale: float,
) -> torch.Tensor:
    """One query token per request against its whole paged context, all requests at once: gather
    every context padded to the longest, mask the padding (which may hold garbage, even NaN)."""
    num_seqs, num_heads, head_dim = query.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    max_len = int(seq_lens.max())
    tables = block_tables[:, : -(-max_len // block_size)].long()
    pad = torch.arange(max_len, device=query.device)[None, :] >= seq_lens[:, None]  # (num_seqs, max_len)
    k = k_cache[tables].flatten(1, 2)[:, :max_len].float().masked_fill(pad[..., None, None], 0.0)
    v = v_cache[tables].flatten(1, 2)[:, :max_len].float().masked_fill(pad[..., None, None], 0.0)
    q = query.float().view(num_seqs, num_kv_heads, num_heads // num_kv_heads, head_dim)  # (s, kv_head, group, d)
    scores = torch.einsum("shgd,slhd->shgl", q, k) * scale  # (num_seqs, num_kv_heads, group, max_len)
    probs = torch.softmax(scores.masked_fill(pad[:, None, None, :], float("-inf")), dim=-1)
    out = torch.einsum("shgl,slhd->shgd", probs, v)  # (num_seqs, num_kv_heads, group, head_dim)
    return out.reshape(num_seqs, num_heads, head_dim).to(query.dtype)
