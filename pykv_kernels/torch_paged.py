r"""The engine's ``torch`` attention backend: ``pykv_kernels.reference``'s contract, fast on a CPU and
batch-invariant by construction.

The references stay the ground truth (clear, einsum). This runs. Each query row -- a decode token or one
row of a prefill chunk -- is attended on its own terms: row at position ``p`` of a request sees that
request's keys ``0 .. p``, gathered and padded to ``KEY_TILE`` multiples, so its shapes depend on ``p``
only::

    keys(p) = ceil((p + 1) / KEY_TILE) * KEY_TILE     (padding reads position 0: never NaN; -inf mask)

Rows whose ``keys(p)`` agree run as entries of one ``scaled_dot_product_attention`` batch, which the CPU
flash kernel computes one by one (tests/kernels/test_torch_paged.py checks a row is bitwise the same alone or in
any batch, at 1 and 2 threads). So a row's output depends on neither the other requests in the step, nor
how its prompt was chunked, nor whether it ran as a decode or a prefill row (recompute after preemption
re-prefills tokens first decoded one at a time). The references are not invariant: their shapes follow
the step's longest request and each chunk's size, which moves results by an ulp.

Grouped-query heads ride as query rows: the GROUP heads of a KV head are GROUP rows of one attention
over that KV head's keys, so SDPA sees no GQA. On CUDA, SDPA picks other kernels: invariance there is
untested (the Triton backend is CUDA's). Torch only: importing this never imports triton.
"""

from __future__ import annotations

import threading

import torch
import torch.nn.functional as F

from pykv_kernels.reference import store_kv

__all__ = ["KEY_TILE", "paged_decode_attention", "paged_prefill_attention", "store_kv"]

KEY_TILE = 128  # keys per row are padded to a multiple of this: fewer batches vs less padding (bench_vs_hf)


def _slots(tables, last, num_keys, block_size) -> torch.Tensor:
    """(b, num_keys) cache slots of positions 0 .. num_keys - 1 of b requests (tables: (b, blocks)); positions
    past ``last`` (b,) read position 0 instead, so padding is never NaN (the mask zeroes it)."""
    keys = torch.arange(num_keys, device=tables.device)
    read = torch.where(keys[None, :] <= last[:, None], keys[None, :], 0)
    return tables.long().gather(1, read // block_size) * block_size + read % block_size


def _rows(flat, slots) -> torch.Tensor:
    """(b, num_keys) slots -> (b, kv_heads, num_keys, head_dim) rows of the flat cache, heads first."""
    return flat.index_select(0, slots.flatten()).view(*slots.shape, *flat.shape[1:]).transpose(1, 2)


def _mask(positions, num_keys, dtype) -> torch.Tensor:
    """(b, 1, 1, num_keys) additive mask: row i sees keys 0 .. positions[i], -inf beyond."""
    hidden = torch.arange(num_keys, device=positions.device)[None, :] > positions[:, None]
    mask = torch.zeros(hidden.shape, dtype=dtype, device=hidden.device).masked_fill_(hidden, float("-inf"))
    return mask[:, None, None]


def _plan(chunks, block_tables, block_size, dtype, device) -> list[tuple]:
    """What ``_attend`` runs for chunks of (request, first row, first position, rows): (rows, slots, mask) jobs.

    A chunk is cut at KEY_TILE boundaries of position. One-row pieces (decodes) of all requests with the same
    key count share one SDPA batch, each entry gathered on its own; a longer piece (prefill rows) gathers its
    request's keys once (slots (1, keys)) and expands them over its rows (stride 0, no copy): both are batch
    entries of SDPA.
    """
    jobs: list[tuple] = []
    singles: dict[int, list[tuple[int, int, int]]] = {}  # singles: tiles -> [(row, request, position)]
    for s, row, pos, count in chunks:
        while count:
            tiles = pos // KEY_TILE + 1
            take = min(count, tiles * KEY_TILE - pos)
            if take == 1:
                singles.setdefault(tiles, []).append((row, s, pos))
            else:
                positions = torch.arange(pos, pos + take, device=device)
                slots = _slots(block_tables[s : s + 1], positions[-1:], tiles * KEY_TILE, block_size)
                jobs.append((slice(row, row + take), slots, _mask(positions, tiles * KEY_TILE, dtype)))
            row, pos, count = row + take, pos + take, count - take
    for tiles, picked in singles.items():
        rows, seqs, positions = (torch.tensor(x, device=device) for x in zip(*picked))
        jobs.append(
            (
                rows,
                _slots(block_tables[seqs], positions, tiles * KEY_TILE, block_size),
                _mask(positions, tiles * KEY_TILE, dtype),
            )
        )
    return jobs


# The layers of a step pass the same metadata tensors: plan once per step, not once per layer. The plan is
# keyed on those tensors themselves (held, so their ids cannot be reused) and their in-place versions, one per
# thread (each Streamlit session steps its engine on its own thread).
_last_plan = threading.local()


def _planned(make_chunks, tensors: tuple, block_size: int, dtype) -> list[tuple]:
    if any(t.is_inference() for t in tensors):  # inference tensors keep no version counter: plan every call
        return _plan(make_chunks(), tensors[0], block_size, dtype, tensors[0].device)
    stamp = (tuple(t._version for t in tensors), block_size, dtype, KEY_TILE)
    held, held_stamp, jobs = getattr(_last_plan, "entry", ((), None, []))
    if held_stamp != stamp or len(held) != len(tensors) or any(a is not b for a, b in zip(held, tensors)):
        jobs = _plan(make_chunks(), tensors[0], block_size, dtype, tensors[0].device)
        _last_plan.entry = (tensors, stamp, jobs)
    return jobs


def _attend(out, query, jobs, k_cache, v_cache, scale) -> None:
    """out[rows] = each job's query rows over its gathered keys."""
    k_flat, v_flat = k_cache.flatten(0, 1), v_cache.flatten(0, 1)  # (num_blocks * block_size, kv_heads, dim)
    num_kv_heads, head_dim = k_flat.shape[1], query.shape[-1]
    for rows, slots, mask in jobs:
        q = query[rows]
        k, v = _rows(k_flat, slots), _rows(v_flat, slots)
        if len(slots) < len(q):
            k, v = k.expand(len(q), -1, -1, -1), v.expand(len(q), -1, -1, -1)
        q = q.reshape(len(q), num_kv_heads, -1, head_dim).to(k.dtype)  # (b, kv_heads, GROUP, head_dim)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        out[rows] = o.reshape(len(q), -1, head_dim).to(out.dtype)


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
        jobs = _planned(
            lambda: [(s, s, n - 1, 1) for s, n in enumerate(seq_lens.tolist())],
            (block_tables, seq_lens),
            k_cache.shape[1],
            k_cache.dtype,
        )
        _attend(out, query, jobs, k_cache, v_cache, scale)
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

    def chunks():  # (request, first row, first position, rows)
        starts, lengths = query_start_loc.tolist(), seq_lens.tolist()
        return [(s, lo, n - (hi - lo), hi - lo) for s, (n, lo, hi) in enumerate(zip(lengths, starts, starts[1:]))]

    jobs = _planned(chunks, (block_tables, seq_lens, query_start_loc), k_cache.shape[1], k_cache.dtype)
    _attend(out, query, jobs, k_cache, v_cache, scale)
    return out
