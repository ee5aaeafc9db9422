"""Paged prefill attention: each request's chunk of new query tokens attends to its cached prefix
and causally to itself. The kernel behind chunked prefill, prefix-cache hits and recompute.

One request with ``seq_len`` cached tokens after this step, of which the last ``q_len`` are new::

    positions:  0 .............. ctx_len-1 | ctx_len ............ seq_len-1
                cached prefix (earlier steps, or a prefix-cache hit) | this chunk (query rows)
    query row i sits at position ctx_len + i and sees keys 0 .. ctx_len + i

Rows of a program: a tile of ``BLOCK_Q`` query tokens times the ``GROUP`` query heads of one KV
head, flattened so each K/V tile is loaded once per KV head::

    row r  ->  token q_block * BLOCK_Q + r // GROUP,  query head kv_head * GROUP + r % GROUP
    BLOCK_M = BLOCK_Q * GROUP rounded up to a power of two >= 16 (extra rows are masked)

Programs are numbered over all requests' query tiles (vLLM's trick, no host sync needed)::

    first tile of request s = query_start_loc[s] // BLOCK_Q + s     (binary-searched per program)
    grid = num_tokens // BLOCK_Q + num_seqs  tiles x num_kv_heads  (spare tiles exit at once)

Pseudocode, one program per (query tile, KV head)::

    q = the tile's rows                                             # (BLOCK_M, head_dim)
    m, l, acc = -inf, 0, 0
    for K/V tile before the tile's first position:   no mask        # every row sees all of it
    for K/V tile up to the tile's last position:     causal mask    # the diagonal
        scores = q @ K^T * scale;  online softmax as in paged_decode.py
    out[rows] = acc / l

Math is fp32 (loads widened straight away); on a GPU 16-bit operands enter ``tl.dot`` as they are.
Run ``python -m pykv_kernels.paged_prefill`` for the check and benchmark.
"""

from __future__ import annotations

import math

import torch

from pykv_kernels import launch_record
from pykv_kernels.launch_utils import check_attention_inputs, next_pow2
from pykv_kernels.paged_batched import batched_attention

# triton and tl only via triton_utils, never `import triton` here: it switches the interpreter on first
from pykv_kernels.triton_utils import dot_operand, interpreted, native_dot, tl, triton


@triton.jit
def _attend_kv_tile(
    acc,
    m_i,
    l_i,
    q,
    q_pos,
    start,
    kv_end,
    table_row,
    k_cache_ptr,
    v_cache_ptr,
    head_off,
    offs_d,
    mask_d,
    qk_scale,
    stride_cb,
    stride_co,
    stride_cd,
    stride_btb,
    BLOCK_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    NATIVE_DOT: tl.constexpr,
):
    """Fold the K/V tokens start .. start+BLOCK_N-1 into the online-softmax state of the rows."""
    offs_n = start + tl.arange(0, BLOCK_N)  # (BLOCK_N,) key positions
    mask_n = offs_n < kv_end
    block = tl.load(table_row + (offs_n // BLOCK_SIZE) * stride_btb, mask=mask_n, other=0).to(tl.int64)
    rows = block * stride_cb + (offs_n % BLOCK_SIZE) * stride_co + head_off
    kv_offs = rows[:, None] + offs_d[None, :] * stride_cd  # (BLOCK_N, BLOCK_D)
    kv_mask = mask_n[:, None] & mask_d[None, :]
    k = dot_operand(tl.load(k_cache_ptr + kv_offs, mask=kv_mask, other=0.0), NATIVE_DOT)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale  # (BLOCK_M, BLOCK_N)
    if CAUSAL:
        s = tl.where(offs_n[None, :] <= q_pos[:, None], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    v = dot_operand(tl.load(v_cache_ptr + kv_offs, mask=kv_mask, other=0.0), NATIVE_DOT)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
    return acc, m_new, l_i


@triton.jit
def paged_prefill_kernel(
    out_ptr,  # (num_tokens, num_heads, head_dim)
    query_ptr,  # (num_tokens, num_heads, head_dim)
    k_cache_ptr,
    v_cache_ptr,  # (num_blocks, block_size, num_kv_heads, head_dim)
    block_tables_ptr,  # (num_seqs, max_blocks_per_seq) int
    seq_lens_ptr,  # (num_seqs,) int
    query_start_loc_ptr,  # (num_seqs + 1,) int
    qk_scale,  # softmax scale * log2(e)
    num_seqs,
    stride_qt,
    stride_qh,
    stride_qd,
    stride_ot,
    stride_oh,
    stride_od,
    stride_cb,
    stride_co,
    stride_ch,
    stride_cd,
    stride_bts,
    stride_btb,
    GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,  # tokens per cache block (any positive integer)
    BLOCK_Q: tl.constexpr,  # query tokens per program
    BLOCK_M: tl.constexpr,  # rows per program: BLOCK_Q * GROUP padded to a power of two >= 16
    BLOCK_N: tl.constexpr,  # KV tokens per tile
    BLOCK_D: tl.constexpr,  # head_dim padded to a power of two >= 16
    NATIVE_DOT: tl.constexpr,
):
    tile = tl.program_id(0)
    kv_head = tl.program_id(1)

    # Which request owns this tile: the last s with first_tile(s) <= tile.
    lo = tile * 0
    hi = lo + num_seqs - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        first = tl.load(query_start_loc_ptr + mid).to(tl.int32) // BLOCK_Q + mid
        lo = tl.where(first <= tile, mid, lo)
        hi = tl.where(first <= tile, hi, mid - 1)
    seq = lo.to(tl.int64)
    q_start = tl.load(query_start_loc_ptr + seq).to(tl.int32)
    q_len = tl.load(query_start_loc_ptr + seq + 1).to(tl.int32) - q_start
    q_block = tile - (q_start // BLOCK_Q + lo)
    if q_block * BLOCK_Q >= q_len:
        return  # a spare tile past the end of this request's chunk
    seq_len = tl.load(seq_lens_ptr + seq).to(tl.int32)
    ctx_len = seq_len - q_len  # cached tokens before the chunk

    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask_d = offs_d < HEAD_DIM
    tok = q_block * BLOCK_Q + offs_m // GROUP  # (BLOCK_M,) token index inside the chunk
    heads = (kv_head * GROUP + offs_m % GROUP).to(tl.int64)
    mask_m = (offs_m < BLOCK_Q * GROUP) & (tok < q_len)
    # Padded rows borrow the position of the chunk's last token so no row is ever fully masked.
    q_pos = ctx_len + tl.minimum(tok, q_len - 1)  # (BLOCK_M,)
    rows_t = (q_start + tok).to(tl.int64)
    q = tl.load(
        query_ptr + rows_t[:, None] * stride_qt + heads[:, None] * stride_qh + offs_d[None, :] * stride_qd,
        mask=mask_m[:, None] & mask_d[None, :],
        other=0.0,
    )
    q = dot_operand(q, NATIVE_DOT)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    table_row = block_tables_ptr + seq * stride_bts
    head_off = kv_head.to(tl.int64) * stride_ch
    # Keys before the tile's first query position are visible to every row: no causal mask.
    full_end = ((ctx_len + q_block * BLOCK_Q) // BLOCK_N) * BLOCK_N
    kv_end = ctx_len + tl.minimum((q_block + 1) * BLOCK_Q, q_len)  # one past the tile's last position
    for start in range(0, full_end, BLOCK_N):
        acc, m_i, l_i = _attend_kv_tile(
            acc,
            m_i,
            l_i,
            q,
            q_pos,
            start,
            kv_end,
            table_row,
            k_cache_ptr,
            v_cache_ptr,
            head_off,
            offs_d,
            mask_d,
            qk_scale,
            stride_cb,
            stride_co,
            stride_cd,
            stride_btb,
            BLOCK_SIZE,
            BLOCK_N,
            False,
            NATIVE_DOT,
        )
    for start in range(full_end, kv_end, BLOCK_N):
        acc, m_i, l_i = _attend_kv_tile(
            acc,
            m_i,
            l_i,
            q,
            q_pos,
            start,
            kv_end,
            table_row,
            k_cache_ptr,
            v_cache_ptr,
            head_off,
            offs_d,
            mask_d,
            qk_scale,
            stride_cb,
            stride_co,
            stride_cd,
            stride_btb,
            BLOCK_SIZE,
            BLOCK_N,
            True,
            NATIVE_DOT,
        )

    result = acc / l_i[:, None]
    out = out_ptr + rows_t[:, None] * stride_ot + heads[:, None] * stride_oh + offs_d[None, :] * stride_od
    tl.store(out, result.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_d[None, :])


def paged_prefill_attention(
    query: torch.Tensor,  # (num_tokens, num_heads, head_dim), requests' chunks back to back
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
    seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache after this step, chunk included
    query_start_loc: torch.Tensor,  # (num_seqs + 1,) offsets of each request's chunk in `query`
    scale: float,
) -> torch.Tensor:
    """Each request's new chunk attends to its cached prefix and causally to itself; same contract as the reference.

    Compiled (a GPU): the kernel above. Interpreted (a CPU): the work-list kernel of ``paged_batched``.
    """
    if interpreted():
        return batched_attention(query, k_cache, v_cache, block_tables, seq_lens, query_start_loc, scale)
    return launch_prefill(query, k_cache, v_cache, block_tables, seq_lens, query_start_loc, scale)


def launch_prefill(
    query,
    k_cache,
    v_cache,
    block_tables,
    seq_lens,
    query_start_loc,
    scale,
    *,
    block_m: int | None = None,
    block_n: int | None = None,
    num_warps: int | None = None,
    num_stages: int = 2,
) -> torch.Tensor:
    """``paged_prefill_attention`` with its tuning knobs exposed (tests and benchmarks set them)."""
    num_seqs, group = check_attention_inputs(query, k_cache, v_cache, block_tables, seq_lens)
    assert query_start_loc.shape == (num_seqs + 1,) and not query_start_loc.dtype.is_floating_point, (
        f"query_start_loc must be ({num_seqs + 1},) int; got {tuple(query_start_loc.shape)} {query_start_loc.dtype}"
    )
    assert query_start_loc.device == query.device, "query_start_loc must be on the query's device"
    _, block_size, num_kv_heads, head_dim = k_cache.shape
    num_tokens = query.shape[0]
    out = torch.empty_like(query)
    if num_tokens == 0 or num_seqs == 0:
        return out
    small = interpreted()
    block_m = max(16, next_pow2(group), block_m or (16 if small else 128))
    block_n = block_n or (16 if small else 64)
    block_q = block_m // group
    grid = (num_tokens // block_q + num_seqs, num_kv_heads)
    paged_prefill_kernel[grid](
        out,
        query,
        k_cache,
        v_cache,
        block_tables,
        seq_lens,
        query_start_loc,
        scale * math.log2(math.e),
        num_seqs,
        *query.stride(),
        *out.stride(),
        *k_cache.stride(),
        *block_tables.stride(),
        GROUP=group,
        HEAD_DIM=head_dim,
        BLOCK_SIZE=block_size,
        BLOCK_Q=block_q,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_D=max(16, next_pow2(head_dim)),
        NATIVE_DOT=native_dot(query, k_cache),
        num_warps=num_warps or (8 if block_m >= 128 else 4),
        num_stages=num_stages,
    )
    if launch_record.recording():
        _record(
            grid,
            block_tables.tolist(),
            seq_lens.tolist(),
            query_start_loc.tolist(),
            block_size,
            block_q,
            block_n,
            block_m,
        )
    return out


def _record(grid, tables, lens, starts, block_size, block_q, block_n, block_m) -> None:
    """The launch as the launcher set it up: each program's query tile by the kernel's own numbering (spare
    tiles own nothing), its key tiles and the blocks the tables it passed lead to."""
    R = launch_record
    first = [starts[s] // block_q + s for s in range(len(lens))]
    programs: list[launch_record.ProgramRecord] = []
    for tile in range(grid[0]):
        s = max(i for i in range(len(lens)) if first[i] <= tile)
        q_len, q_block = starts[s + 1] - starts[s], tile - first[s]
        items = []
        if q_block * block_q < q_len:
            ctx = lens[s] - q_len
            t0, t1 = q_block * block_q, min((q_block + 1) * block_q, q_len)
            items = [
                R.WorkItem(
                    s,
                    h,
                    None,
                    (starts[s] + t0, starts[s] + t1),
                    (ctx + t0, ctx + t1),
                    0,
                    ctx + t1,
                    ctx + t0,
                    R.tiles_of(0, ctx + t1, block_n),
                    R.table_walk(tables[s], 0, ctx + t1, block_size),
                )
                for h in range(grid[1])
            ]
        programs.extend(R.ProgramRecord((tile, h, 0), tuple(items[h : h + 1])) for h in range(grid[1]))
    R.add(
        R.LaunchRecord(
            "paged_prefill_kernel",
            "prefill",
            R.grid3(grid),
            block_size,
            (("BLOCK_Q", block_q), ("BLOCK_M", block_m), ("BLOCK_N", block_n)),
            tuple(programs),
            False,
        )
    )


if __name__ == "__main__":
    from pykv_kernels import reference
    from pykv_kernels.harness import KernelCase, Target, run_main
    from pykv_kernels.testing import make_paged_case

    def prefill_case(t: Target) -> KernelCase:
        heads, kv_heads, head_dim, block_size = t.pick((32, 8, 128, 16), (4, 2, 32, 5))
        seq_lens, query_lens = t.pick(([4096], [4096]), ([1, 23, 40], [1, 23, 17]))
        c = make_paged_case(
            heads,
            kv_heads,
            head_dim,
            block_size,
            seq_lens=seq_lens,
            query_lens=query_lens,
            dtype=t.dtype,
            device=t.device,
        )
        args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
        causal_flops = sum(4 * q * (n - q / 2) * heads * head_dim for q, n in zip(query_lens, seq_lens))
        return KernelCase(
            "paged_prefill",
            f"chunks of {query_lens} tokens ending contexts of {seq_lens}, block_size {block_size}",
            lambda: paged_prefill_attention(*args),
            lambda: reference.paged_prefill_attention(*args),
            tol=t.pick(2e-2, 1e-5),
            work=causal_flops / 1e12,
            unit="TFLOP/s",
        )

    run_main(prefill_case)
