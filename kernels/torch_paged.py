r"""The engine's ``torch`` attention backend: ``kernels.reference``'s contract, built for speed on a CPU.

The references stay the ground truth (clear, one request at a time, einsum); this is what runs. Two
things make it fast at one thread, where a decode step of the reference spent ~40% of its time
gathering padded contexts, masking them and running einsum over the padding:

- decode rows are gathered through one flat slot index per request and attended with
  ``scaled_dot_product_attention`` (a fused CPU kernel, grouped-query heads native), in buckets of
  requests of similar context length, so padding stays small::

      slot of position j of request s = block_tables[s, j // block_size] * block_size + j % block_size
      bucket = requests sorted by length, cut where padding would pass 1/4 of the bucket's keys

- a prefill step sends its one-token rows (decodes mixed into a chunked-prefill step) down the decode
  path and attends each chunk with one SDPA call over its gathered context, with the causal mask
  offset by the cached prefix (row i sees keys 0 .. ctx_len + i).

Torch only: importing this never imports triton.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.reference import store_kv

__all__ = ["paged_decode_attention", "paged_prefill_attention", "store_kv"]

PAD_SHARE = 0.25  # a decode bucket is cut where its padding would pass this share of its keys


def _slots(block_table: torch.Tensor, length: int, block_size: int) -> torch.Tensor:
    """(length,) flat cache slots of positions 0 .. length - 1 of one request."""
    pos = torch.arange(length, device=block_table.device)
    return block_table.long()[pos // block_size] * block_size + pos % block_size


def _buckets(lengths: list[int]) -> list[list[int]]:
    """Request indices grouped by similar length (sorted, cut where the padding would grow too large)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    buckets: list[list[int]] = []
    for i in order:
        if buckets:
            b = buckets[-1]
            keys = lengths[i] * (len(b) + 1)  # the bucket padded to its new longest
            if keys - sum(lengths[j] for j in b) - lengths[i] <= PAD_SHARE * keys:
                b.append(i)
                continue
        buckets.append([i])
    return buckets


def _gather(flat: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
    """(..., n) slots -> (..., num_kv_heads, n, head_dim): rows of the flat cache, heads first for attention."""
    rows = flat.index_select(0, slots.flatten()).view(*slots.shape, *flat.shape[1:])  # (..., n, kv_heads, dim)
    return rows.transpose(-3, -2)


def _decode_rows(out, query, rows, k_flat, v_flat, block_tables, lengths, seqs, block_size, scale) -> None:
    """out[rows[i]] = one query row of request seqs[i] against its ``lengths[i]`` keys, bucket by bucket.

    Grouped-query heads ride as query *positions*: the GROUP heads of a KV head are GROUP rows of one
    attention over that KV head's keys (each row attends on its own), so SDPA sees no GQA at all::

        query (b, num_heads, d) -> (b, num_kv_heads, GROUP, d)   keys (b, num_kv_heads, longest, d)
    """
    num_kv_heads = k_flat.shape[1]
    for bucket in _buckets([lengths[s] for s in seqs]):
        lens = [lengths[seqs[i]] for i in bucket]
        longest = max(lens)
        pos = torch.arange(longest, device=query.device)
        tables = block_tables[[seqs[i] for i in bucket]].long()  # (b, max_blocks_per_seq)
        slots = tables[:, pos // block_size] * block_size + pos % block_size  # (b, longest)
        mask = None  # added to the scores: 0 = attend, -inf = padding
        if min(lens) < longest:
            keep = pos[None, :] < torch.tensor(lens, device=query.device)[:, None]  # (b, longest)
            slots = torch.where(keep, slots, slots[:, :1])  # padding reads position 0 (never NaN), weight 0
            mask = torch.zeros(keep.shape, device=query.device).masked_fill_(~keep, float("-inf"))[:, None, None]
        k, v = _gather(k_flat, slots), _gather(v_flat, slots)  # (b, num_kv_heads, longest, head_dim)
        picked = [rows[i] for i in bucket]
        q = query[picked].view(len(bucket), num_kv_heads, -1, query.shape[-1])  # (b, kv_heads, GROUP, head_dim)
        o = F.scaled_dot_product_attention(q.to(k.dtype), k, v, attn_mask=None if mask is None else mask.to(k.dtype),
                                           scale=scale)
        out[picked] = o.reshape(len(bucket), -1, query.shape[-1]).to(out.dtype)


def paged_decode_attention(
    query: torch.Tensor,  # (num_seqs, num_heads, head_dim): one new token per request
    k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
    seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache, the new one included
    scale: float,
) -> torch.Tensor:
    """Same contract as ``reference.paged_decode_attention``."""
    out = torch.empty_like(query)
    if query.shape[0]:
        lengths = seq_lens.tolist()
        seqs = list(range(len(lengths)))
        _decode_rows(out, query, seqs, k_cache.flatten(0, 1), v_cache.flatten(0, 1), block_tables, lengths, seqs,
                     k_cache.shape[1], scale)
    return out


def paged_prefill_attention(
    query: torch.Tensor,  # (num_tokens, num_heads, head_dim), requests' chunks back to back
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
    seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache after this step, chunk included
    query_start_loc: torch.Tensor,  # (num_seqs + 1,) offsets of each request's chunk in `query`
    scale: float,
) -> torch.Tensor:
    """Same contract as ``reference.paged_prefill_attention``."""
    out = torch.empty_like(query)
    starts, lengths = query_start_loc.tolist(), seq_lens.tolist()
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    k_flat, v_flat = k_cache.flatten(0, 1), v_cache.flatten(0, 1)  # (num_blocks * block_size, kv_heads, dim)
    ones = [s for s in range(len(lengths)) if starts[s + 1] - starts[s] == 1]
    if ones:
        _decode_rows(out, query, [starts[s] for s in ones], k_flat, v_flat, block_tables, lengths, ones,
                     block_size, scale)
    head_dim = query.shape[-1]
    for s in range(len(lengths)):
        lo, hi, n = starts[s], starts[s + 1], lengths[s]
        q_len = hi - lo
        if q_len <= 1:
            continue
        slots = _slots(block_tables[s], n, block_size)
        k, v = _gather(k_flat, slots), _gather(v_flat, slots)  # (num_kv_heads, n, head_dim)
        # rows (token, head) -> (KV head, token * GROUP + head in group): the group rides as extra query rows
        q = query[lo:hi].view(q_len, num_kv_heads, -1, head_dim).transpose(0, 1).reshape(num_kv_heads, -1, head_dim)
        group = q.shape[1] // q_len
        q_pos = torch.arange(n - q_len, n, device=query.device).repeat_interleave(group)  # (q_len * GROUP,)
        visible = torch.arange(n, device=query.device)[None, :] <= q_pos[:, None]  # row sees keys <= its position
        mask = torch.zeros(visible.shape, dtype=k.dtype, device=query.device).masked_fill_(~visible, float("-inf"))
        o = F.scaled_dot_product_attention(q.to(k.dtype), k, v, attn_mask=mask, scale=scale)  # (kv_heads, rows, d)
        out[lo:hi] = o.view(num_kv_heads, q_len, group, head_dim).transpose(0, 1).reshape(q_len, -1, head_dim) \
            .to(out.dtype)
    return out
