r"""Paged attention over a work list: many (request, KV head, query tile) items per program.

The decode and prefill launchers pick this kernel when Triton runs on the CPU through its
interpreter, whose cost is per operation and per program, not per element: a GPU launch of
``num_seqs x num_kv_heads`` programs walking 16-token tiles is hundreds of interpreted programs a
step, while this one stacks the items along a leading batch dim and reads each item's whole context
in one wide tile, so a whole decode batch is one program of ~50 tile operations. Same contract as
``reference.paged_decode_attention`` and ``reference.paged_prefill_attention``.

A work item is one request's query tile against one KV head (the launcher builds the list)::

    item i:  seq[i]   request (row of block_tables)      head[i]  KV head
             row[i]   its first query row in `query`      len[i]   query tokens (<= BLOCK_Q)
             pos[i]   position of its first query token   -> keys 0 .. pos[i] + len[i] - 1 are visible

    row r of an item  ->  query token row[i] + r // GROUP,  query head head[i] * GROUP + r % GROUP
    BLOCK_M = BLOCK_Q * GROUP rounded up to a power of two (extra rows write a spare output row)
    the list is padded to the grid with copies of its last item, which write the spare row too

Pseudocode, one program per BLOCK_B items (every tile carries a leading item dim)::

    q = rows of each item                                             # (BLOCK_B, BLOCK_M, head_dim)
    m, l, acc = -inf, 0, 0
    for tile of BLOCK_N key positions j:
        block = block_tables[seq, j // block_size]   masked past each item's last position
        K, V  = cache[block, j % block_size, head, :]                 # (BLOCK_B, BLOCK_N, head_dim)
        scores = q @ K^T * scale, -inf where j > the row's position   # (BLOCK_B, BLOCK_M, BLOCK_N)
        online softmax as in paged_decode.py
    out[rows] = acc / l

    ONE_TILE (BLOCK_N covers the longest context, the usual case): the same tile once, with a plain softmax.
    CAUSAL is off for one-token rows (decodes): a row's position is its item's last, so the key mask is the mask.

With ``TRACE`` the kernel writes the block of every key column it gathered (``launch_record``: the
kernel view's block-table walk, as it ran). Math is fp32. The tiles are sized for the interpreter (a GPU runs
``paged_decode.py`` / ``paged_prefill.py``; this kernel is not in the ahead-of-time compile check).
Run ``python -m pykv_kernels.paged_batched`` for the check and benchmark.
"""

from __future__ import annotations

import math

import torch

from pykv_kernels import launch_record
from pykv_kernels.batched_plan import BatchedPlan, launch_record_of, plan_attention, row_tables
from pykv_kernels.launch_utils import next_pow2

# triton and tl only via triton_utils, never `import triton` here: it switches the interpreter on first
from pykv_kernels.triton_utils import MAX_COMBINE, SUM_COMBINE, tl, triton


@triton.jit
def paged_batched_kernel(
    out_ptr,  # (num_tokens + 1, num_heads, head_dim): the last row takes the padding rows' writes
    query_ptr,  # (num_tokens, num_heads, head_dim)
    k_cache_ptr,
    v_cache_ptr,  # (num_blocks, block_size, num_kv_heads, head_dim)
    block_tables_ptr,  # (num_seqs, max_blocks_per_seq) int64 (the launcher widens an int32 table)
    item_table_ptr,
    item_head_ptr,  # (padded_items,) int64: offset of the item's table row, of its KV head
    item_kv_end_ptr,  # (padded_items,) int32: visible keys
    row_q_ptr,
    row_o_ptr,  # (padded_items, BLOCK_M) int64: offset of each row's query / output vector
    row_pos_ptr,  # (padded_items, BLOCK_M) int32: position of each row's token (it sees keys 0 .. pos)
    trace_ptr,  # (padded_items, trace_width) int32: block of each key column read (TRACE only)
    qk_scale,  # softmax scale * log2(e)
    trace_width,
    stride_qd,
    stride_od,
    stride_cb,
    stride_co,
    stride_cd,
    stride_btb,
    HEAD_DIM: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,  # tokens per cache block (any positive integer)
    BLOCK_B: tl.constexpr,  # work items per program
    BLOCK_M: tl.constexpr,  # rows per item: BLOCK_Q * GROUP padded to a power of two
    BLOCK_N: tl.constexpr,  # key positions per tile
    BLOCK_D: tl.constexpr,  # head_dim padded to a power of two >= 16
    ONE_TILE: tl.constexpr,  # BLOCK_N covers every item's keys: one plain softmax, no online rescaling
    CAUSAL: tl.constexpr,  # False for one-token rows (decodes): every row sees exactly its item's keys
    TRACE: tl.constexpr,
):
    # Under the interpreter every operation costs ~50 us whatever its size: the constexpr branches below
    # leave out the ones a launch does not need (masks of unpadded dims, causal masks of decodes, rescaling).
    # Index math is int64 from the aranges on: the interpreter re-checks every int32 add and multiply for overflow
    # in int64 (eight more operations each: 12-15% of an interpreted step); int64 operands skip the check.
    item = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B).to(tl.int64)  # (BLOCK_B,) padded
    table_rows = block_tables_ptr + tl.load(item_table_ptr + item)  # (BLOCK_B,)
    head_off = tl.load(item_head_ptr + item)
    kv_end = tl.load(item_kv_end_ptr + item)  # (BLOCK_B,)
    offs_d = tl.arange(0, BLOCK_D).to(tl.int64)[None, None, :]
    rows = item[:, None] * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)[None, :]  # (BLOCK_B, BLOCK_M)
    q_ptrs = query_ptr + tl.load(row_q_ptr + rows)[:, :, None] + offs_d * stride_qd
    kv_d = offs_d * stride_cd
    if HEAD_DIM == BLOCK_D:
        q = tl.load(q_ptrs).to(tl.float32)  # (BLOCK_B, BLOCK_M, BLOCK_D)
    else:
        q = tl.load(q_ptrs, mask=offs_d < HEAD_DIM, other=0.0).to(tl.float32)
    if CAUSAL:
        q_pos = tl.load(row_pos_ptr + rows)[:, :, None]  # (BLOCK_B, BLOCK_M, 1)

    # The tile body is written out in both branches, not shared through a @jit helper: under the interpreter
    # every @jit call re-patches triton.language (~2 ms, see triton_utils), as much as the whole tile costs.
    if ONE_TILE:
        offs_n = tl.arange(0, BLOCK_N).to(tl.int64)  # (BLOCK_N,) key positions
        mask_n = offs_n[None, :] < kv_end[:, None]  # (BLOCK_B, BLOCK_N)
        block = tl.load(table_rows[:, None] + (offs_n // BLOCK_SIZE)[None, :] * stride_btb, mask=mask_n, other=0)
        if TRACE:
            tl.store(trace_ptr + item[:, None] * trace_width + offs_n[None, :], block, mask=mask_n)
        slots = block * stride_cb + ((offs_n % BLOCK_SIZE) * stride_co)[None, :] + head_off[:, None]
        kv_offs = slots[:, :, None] + kv_d  # (BLOCK_B, BLOCK_N, BLOCK_D)
        kv_mask = mask_n[:, :, None]
        if HEAD_DIM < BLOCK_D:
            kv_mask = kv_mask & (offs_d < HEAD_DIM)
        k = tl.load(k_cache_ptr + kv_offs, mask=kv_mask, other=0.0).to(tl.float32)
        s = tl.dot(q, tl.permute(k, (0, 2, 1)), input_precision="ieee") * qk_scale  # (BLOCK_B, BLOCK_M, BLOCK_N)
        if CAUSAL:
            s = tl.where(offs_n[None, None, :] <= q_pos, s, float("-inf"))
        else:
            s = tl.where(mask_n[:, None, :], s, float("-inf"))
        m_i = tl.reduce(s, 2, MAX_COMBINE)  # tl.max(s, 2), see triton_utils
        p = tl.exp2(s - m_i[:, :, None])
        l_i = tl.reduce(p, 2, SUM_COMBINE)  # tl.sum(p, 2)
        v = tl.load(v_cache_ptr + kv_offs, mask=kv_mask, other=0.0).to(tl.float32)
        acc = tl.dot(p, v, input_precision="ieee")  # (BLOCK_B, BLOCK_M, BLOCK_D)
    else:
        m_i = tl.full([BLOCK_B, BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.full([BLOCK_B, BLOCK_M], 0.0, tl.float32)  # tl.full, not tl.zeros: a @jit call (see triton_utils)
        acc = tl.full([BLOCK_B, BLOCK_M, BLOCK_D], 0.0, tl.float32)
        for start in range(0, tl.reduce(kv_end, 0, MAX_COMBINE), BLOCK_N):  # up to this program's last visible key
            offs_n = start + tl.arange(0, BLOCK_N).to(tl.int64)
            mask_n = offs_n[None, :] < kv_end[:, None]
            block = tl.load(table_rows[:, None] + (offs_n // BLOCK_SIZE)[None, :] * stride_btb, mask=mask_n, other=0)
            if TRACE:
                tl.store(trace_ptr + item[:, None] * trace_width + offs_n[None, :], block, mask=mask_n)
            slots = block * stride_cb + ((offs_n % BLOCK_SIZE) * stride_co)[None, :] + head_off[:, None]
            kv_offs = slots[:, :, None] + kv_d
            kv_mask = mask_n[:, :, None]
            if HEAD_DIM < BLOCK_D:
                kv_mask = kv_mask & (offs_d < HEAD_DIM)
            k = tl.load(k_cache_ptr + kv_offs, mask=kv_mask, other=0.0).to(tl.float32)
            s = tl.dot(q, tl.permute(k, (0, 2, 1)), input_precision="ieee") * qk_scale
            if CAUSAL:
                s = tl.where(offs_n[None, None, :] <= q_pos, s, float("-inf"))
            else:
                s = tl.where(mask_n[:, None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.reduce(s, 2, MAX_COMBINE))
            alpha = tl.exp2(m_i - m_new)
            p = tl.exp2(s - m_new[:, :, None])
            l_i = l_i * alpha + tl.reduce(p, 2, SUM_COMBINE)
            v = tl.load(v_cache_ptr + kv_offs, mask=kv_mask, other=0.0).to(tl.float32)
            acc = acc * alpha[:, :, None] + tl.dot(p, v, input_precision="ieee")
            m_i = m_new

    out = out_ptr + tl.load(row_o_ptr + rows)[:, :, None] + offs_d * stride_od
    if HEAD_DIM == BLOCK_D:
        tl.store(out, (acc / l_i[:, :, None]).to(out_ptr.dtype.element_ty))
    else:
        tl.store(out, (acc / l_i[:, :, None]).to(out_ptr.dtype.element_ty), mask=offs_d < HEAD_DIM)


def run_plan(plan: BatchedPlan, out, query, k_cache, v_cache, block_tables, scale: float) -> None:
    """Launch one plan into ``out`` (num_tokens + 1 rows). While launches are recorded, the kernel also
    writes the block of every key column it read, and the plan goes to the record with that trace."""
    tables = block_tables.to(torch.int64)  # a few hundred ints: cheaper here than a cast per key in the kernel
    columns = row_tables(plan, query, out, tables.stride(0), k_cache.stride(2))
    table_off, head_off, kv_end, q_off, o_off, pos = (t.to(query.device) for t in columns)
    trace = None
    if launch_record.recording():
        width = triton.cdiv(plan.kv_len_max, plan.block_n) * plan.block_n
        trace = torch.full((kv_end.shape[0], width), -1, dtype=torch.int32, device=query.device)
    trace_arg = trace if trace is not None else kv_end
    head_dim = k_cache.shape[3]
    paged_batched_kernel[plan.grid](
        out,
        query,
        k_cache,
        v_cache,
        tables,
        table_off,
        head_off,
        kv_end,
        q_off,
        o_off,
        pos,
        trace_arg,
        scale * math.log2(math.e),
        trace_arg.shape[-1],
        query.stride(2),
        out.stride(2),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(3),
        tables.stride(1),
        HEAD_DIM=head_dim,
        BLOCK_SIZE=k_cache.shape[1],
        BLOCK_B=plan.block_b,
        BLOCK_M=plan.block_m,
        BLOCK_N=plan.block_n,
        BLOCK_D=max(16, next_pow2(head_dim)),
        ONE_TILE=plan.block_n >= plan.kv_len_max,
        CAUSAL=plan.block_q > 1,
        TRACE=trace is not None,
    )
    if trace is not None:
        launch_record.add(launch_record_of(plan, trace.cpu(), k_cache.shape[1]))


def batched_attention(
    query: torch.Tensor,  # (num_tokens, num_heads, head_dim), requests' chunks back to back
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
    seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache after this step, chunk included
    query_start_loc: torch.Tensor,  # (num_seqs + 1,) offsets of each request's chunk in `query`
    scale: float,
    *,
    block_q: int | None = None,
    block_n: int | None = None,
    block_b: int | None = None,
) -> torch.Tensor:
    """Prefill and decode alike (a decode is a one-token chunk); same contract as the references.
    ``block_q`` / ``block_n`` / ``block_b`` force the tile sizes (tests); by default ``plan_attention`` picks."""
    num_tokens, num_heads, head_dim = query.shape
    out = torch.empty(num_tokens + 1, num_heads, head_dim, dtype=query.dtype, device=query.device)
    if num_tokens and block_tables.shape[0]:
        for plan in plan_attention(query, k_cache, block_tables, seq_lens, query_start_loc, block_q, block_n, block_b):
            run_plan(plan, out, query, k_cache, v_cache, block_tables, scale)
    return out[:num_tokens]


if __name__ == "__main__":
    from functools import partial

    from pykv_kernels import reference
    from pykv_kernels.harness import KernelCase, Target, run_main
    from pykv_kernels.testing import make_paged_case

    def batched_case(t: Target) -> KernelCase:
        seq_lens, query_lens = [1, 23, 40, 200, 90], [1, 23, 17, 1, 1]
        c = make_paged_case(8, 2, 32, 16, seq_lens=seq_lens, query_lens=query_lens, dtype=t.dtype, device=t.device)
        args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
        kv_bytes = 2 * sum(seq_lens) * 2 * 32 * c.k_cache.element_size()
        return KernelCase(
            "paged_batched",
            f"chunks of {query_lens} tokens ending contexts of {seq_lens}, block_size 16",
            lambda: batched_attention(*args),
            lambda: reference.paged_prefill_attention(*args),
            tol=t.pick(2e-2, 1e-5),
            work=kv_bytes / 1e9,
            unit="GB/s of K/V read",
            checks={f"block_q={q}": partial(batched_attention, *args, block_q=q) for q in (1, 4, 64)},
        )

    run_main(batched_case)
