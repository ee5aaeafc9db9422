r"""Paged decode attention: one new query token per request against its whole paged context.

Token ``j`` of request ``s`` lives in the cache at::

    j ---> logical block  j // block_size ---> block_tables[s, j // block_size] = physical block b
      \--> offset         j %  block_size
    k_cache[b, j % block_size, kv_head, :]

Grouped-query attention: the ``GROUP = num_heads // num_kv_heads`` query heads that share a KV
head are processed by one program, as the rows of one tile, so every K/V tile is loaded once per
KV head (not once per query head). The rows are padded to ``BLOCK_G >= 16`` so that ``tl.dot``
is legal on a GPU; padded rows hold zeros and are never stored.

Pseudocode, one program per (request s, KV head h, split k)::

    q   = query[s, h*GROUP : (h+1)*GROUP, :]                       # (GROUP, head_dim)
    m, l, acc = -inf, 0, 0                                          # online softmax state per row
    for tile of BLOCK_N tokens j in split k of 0 .. seq_len[s]-1:   # masked tail
        K, V = gather rows j through the block table                # (BLOCK_N, head_dim)
        scores = q @ K^T * scale                                    # (GROUP, BLOCK_N)
        m_new = max(m, rowmax(scores));  p = exp(scores - m_new)
        l   = l * exp(m - m_new) + rowsum(p)
        acc = acc * exp(m - m_new) + p @ V
    one split:  out[s, heads] = acc / l
    split-K:    partial[s, heads, k] = acc / l,  lse[s, heads, k] = m + log(l)
                then the reduce kernel: out = sum_k exp(lse_k - max lse) * partial_k / sum_k exp(...)

Split-K ("flash-decoding") spreads one long context over many programs so that a small batch still
fills the GPU. Math is fp32: loads are widened to fp32 straight away, except that on a GPU 16-bit
K/V (and the probabilities) enter ``tl.dot`` in their own dtype to use the tensor cores, with fp32
accumulation. The interpreter always takes the fp32 path (it computes bf16 wrong).
Run ``python -m pykv_kernels.paged_decode`` for the check and benchmark.
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
def paged_decode_kernel(
    out_ptr,  # (num_seqs, num_heads, head_dim): the answer, when NUM_SPLITS == 1
    part_out_ptr,  # (num_seqs, num_heads, NUM_SPLITS, head_dim) fp32 contiguous: per-split results
    part_lse_ptr,  # (num_seqs, num_heads, NUM_SPLITS) fp32 contiguous: per-split log2-sum-exp2
    query_ptr,  # (num_seqs, num_heads, head_dim)
    k_cache_ptr,
    v_cache_ptr,  # (num_blocks, block_size, num_kv_heads, head_dim)
    block_tables_ptr,  # (num_seqs, max_blocks_per_seq) int
    seq_lens_ptr,  # (num_seqs,) int
    qk_scale,  # softmax scale * log2(e): scores live in the exp2 domain
    tokens_per_split,  # a multiple of BLOCK_N
    num_heads,
    stride_qs,
    stride_qh,
    stride_qd,
    stride_os,
    stride_oh,
    stride_od,
    stride_cb,
    stride_co,
    stride_ch,
    stride_cd,
    stride_bts,
    stride_btb,
    GROUP: tl.constexpr,  # query heads per KV head
    HEAD_DIM: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,  # tokens per cache block (any positive integer)
    BLOCK_G: tl.constexpr,  # GROUP padded to a power of two >= 16
    BLOCK_N: tl.constexpr,  # KV tokens per tile
    BLOCK_D: tl.constexpr,  # head_dim padded to a power of two >= 16
    NUM_SPLITS: tl.constexpr,
    NATIVE_DOT: tl.constexpr,  # feed 16-bit operands to tl.dot as they are (GPU only)
):
    seq = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(seq_lens_ptr + seq).to(tl.int32)
    split_start = split * tokens_per_split
    split_end = tl.minimum(seq_len, split_start + tokens_per_split)

    offs_g = tl.arange(0, BLOCK_G)  # row -> query head kv_head * GROUP + row
    offs_d = tl.arange(0, BLOCK_D)
    mask_g = offs_g < GROUP
    mask_d = offs_d < HEAD_DIM
    heads = (kv_head * GROUP + offs_g).to(tl.int64)
    q = tl.load(
        query_ptr + seq * stride_qs + heads[:, None] * stride_qh + offs_d[None, :] * stride_qd,
        mask=mask_g[:, None] & mask_d[None, :],
        other=0.0,
    )
    q = dot_operand(q, NATIVE_DOT)  # (BLOCK_G, BLOCK_D)

    m_i = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], tl.float32)
    table_row = block_tables_ptr + seq * stride_bts
    head_off = kv_head.to(tl.int64) * stride_ch
    for start in range(split_start, split_end, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)  # token positions of this tile
        mask_n = offs_n < split_end
        block = tl.load(table_row + (offs_n // BLOCK_SIZE) * stride_btb, mask=mask_n, other=0).to(tl.int64)
        rows = block * stride_cb + (offs_n % BLOCK_SIZE) * stride_co + head_off  # (BLOCK_N,)
        kv_offs = rows[:, None] + offs_d[None, :] * stride_cd  # (BLOCK_N, BLOCK_D)
        kv_mask = mask_n[:, None] & mask_d[None, :]
        k = dot_operand(tl.load(k_cache_ptr + kv_offs, mask=kv_mask, other=0.0), NATIVE_DOT)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale  # (BLOCK_G, BLOCK_N)
        s = tl.where(mask_n[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = dot_operand(tl.load(v_cache_ptr + kv_offs, mask=kv_mask, other=0.0), NATIVE_DOT)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        m_i = m_new

    # An empty split (its range starts past seq_len) has l_i == 0 and acc == 0: it reports 0 with
    # weight exp2(-inf) = 0. Every request has seq_len >= 1, so split 0 is never empty.
    nonempty = l_i > 0
    l_safe = tl.where(nonempty, l_i, 1.0)
    result = acc / l_safe[:, None]
    out_mask = mask_g[:, None] & mask_d[None, :]
    if NUM_SPLITS == 1:
        out = out_ptr + seq * stride_os + heads[:, None] * stride_oh + offs_d[None, :] * stride_od
        tl.store(out, result.to(out_ptr.dtype.element_ty), mask=out_mask)
    else:
        part = (seq * num_heads + heads) * NUM_SPLITS + split  # (BLOCK_G,) row of the partial buffers
        tl.store(part_out_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], result, mask=out_mask)
        tl.store(part_lse_ptr + part, tl.where(nonempty, m_i + tl.log2(l_safe), float("-inf")), mask=mask_g)


@triton.jit
def paged_decode_reduce_kernel(
    out_ptr,  # (num_seqs, num_heads, head_dim)
    part_out_ptr,  # (num_seqs, num_heads, NUM_SPLITS, head_dim) fp32 contiguous
    part_lse_ptr,  # (num_seqs, num_heads, NUM_SPLITS) fp32 contiguous
    num_heads,
    stride_os,
    stride_oh,
    stride_od,
    HEAD_DIM: tl.constexpr,
    NUM_SPLITS: tl.constexpr,
    BLOCK_S: tl.constexpr,  # NUM_SPLITS padded to a power of two
    BLOCK_D: tl.constexpr,
):
    """out = sum_k w_k * partial_k / sum_k w_k with w_k = exp2(lse_k - max_k lse_k)."""
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    mask_s = offs_s < NUM_SPLITS
    mask_d = offs_d < HEAD_DIM
    part = (seq * num_heads + head) * NUM_SPLITS + offs_s  # (BLOCK_S,)
    lse = tl.load(part_lse_ptr + part, mask=mask_s, other=float("-inf"))
    w = tl.exp2(lse - tl.max(lse, 0))  # (BLOCK_S,), 0 for empty and padded splits
    o_mask = mask_s[:, None] & mask_d[None, :]
    o = tl.load(part_out_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], mask=o_mask, other=0.0)  # (BLOCK_S, BLOCK_D)
    result = tl.sum(w[:, None] * o, 0) / tl.sum(w, 0)  # (BLOCK_D,)
    out = out_ptr + seq * stride_os + head * stride_oh + offs_d * stride_od
    tl.store(out, result.to(out_ptr.dtype.element_ty), mask=mask_d)


def auto_num_splits(num_seqs: int, num_kv_heads: int, max_context: int, device: torch.device) -> int:
    """Split-K only where the batch alone cannot fill the GPU: aim at ~2 programs per SM, >= 256 tokens a split."""
    if device.type != "cuda":
        return 1
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    programs = num_seqs * num_kv_heads
    want = -(-2 * sms // programs)
    return max(1, min(want, max_context // 256, 64))


def paged_decode_attention(
    query: torch.Tensor,  # (num_seqs, num_heads, head_dim): one new token per request
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
    seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache, the new one included
    scale: float,
) -> torch.Tensor:
    """One query token per request against its whole paged context; same contract as the reference.

    Compiled (a GPU): the kernel above. Interpreted (a CPU): the work-list kernel of ``paged_batched``,
    whose few wide programs suit the interpreter (its cost is per operation and per program).
    """
    if interpreted():
        starts = torch.arange(block_tables.shape[0] + 1, dtype=torch.int32, device=query.device)
        return batched_attention(query, k_cache, v_cache, block_tables, seq_lens, starts, scale, block_q=1)
    return launch_decode(query, k_cache, v_cache, block_tables, seq_lens, scale)


def launch_decode(
    query,
    k_cache,
    v_cache,
    block_tables,
    seq_lens,
    scale,
    *,
    num_splits: int | None = None,
    block_n: int | None = None,
    num_warps: int = 4,
    num_stages: int = 2,
) -> torch.Tensor:
    """``paged_decode_attention`` with its tuning knobs exposed (tests and benchmarks set them).

    The context bound used to size the splits is ``max_blocks_per_seq * block_size`` (known on the
    host without reading ``seq_lens`` back from the device).
    """
    num_seqs, group = check_attention_inputs(query, k_cache, v_cache, block_tables, seq_lens)
    assert query.shape[0] == num_seqs, (
        f"decode wants one query row per request: {query.shape[0]} rows, {num_seqs} requests"
    )
    _, block_size, num_kv_heads, head_dim = k_cache.shape
    num_heads = query.shape[1]
    out = torch.empty_like(query)
    if num_seqs == 0:
        return out
    max_context = block_tables.shape[1] * block_size
    if block_n is None:
        block_n = 16 if interpreted() else 64
    if num_splits is None:
        num_splits = auto_num_splits(num_seqs, num_kv_heads, max_context, query.device)
    tokens_per_split = triton.cdiv(triton.cdiv(max(max_context, 1), num_splits), block_n) * block_n
    block_d = max(16, next_pow2(head_dim))
    part_out = part_lse = out  # unused placeholders when there is a single split
    if num_splits > 1:
        part_out = torch.empty(num_seqs, num_heads, num_splits, head_dim, dtype=torch.float32, device=query.device)
        part_lse = torch.empty(num_seqs, num_heads, num_splits, dtype=torch.float32, device=query.device)
    paged_decode_kernel[(num_seqs, num_kv_heads, num_splits)](
        out,
        part_out,
        part_lse,
        query,
        k_cache,
        v_cache,
        block_tables,
        seq_lens,
        scale * math.log2(math.e),
        tokens_per_split,
        num_heads,
        *query.stride(),
        *out.stride(),
        *k_cache.stride(),
        *block_tables.stride(),
        GROUP=group,
        HEAD_DIM=head_dim,
        BLOCK_SIZE=block_size,
        BLOCK_G=max(16, next_pow2(group)),
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        NUM_SPLITS=num_splits,
        NATIVE_DOT=native_dot(query, k_cache),
        num_warps=num_warps,
        num_stages=num_stages,
    )
    if num_splits > 1:
        paged_decode_reduce_kernel[(num_seqs, num_heads)](
            out,
            part_out,
            part_lse,
            num_heads,
            *out.stride(),
            HEAD_DIM=head_dim,
            NUM_SPLITS=num_splits,
            BLOCK_S=next_pow2(num_splits),
            BLOCK_D=block_d,
        )
    if launch_record.recording():
        _record(
            block_tables.tolist(),
            seq_lens.tolist(),
            block_size,
            num_kv_heads,
            num_heads,
            num_splits,
            tokens_per_split,
            block_n,
        )
    return out


def _record(tables, lens, block_size, num_kv_heads, num_heads, num_splits, tokens_per_split, block_n) -> None:
    """The launches as the launcher set them up (grid, splits, tiles; blocks from the tables it passed)."""
    R = launch_record
    programs = []
    for s, n in enumerate(lens):
        for h in range(num_kv_heads):
            for k in range(num_splits):
                lo, hi = k * tokens_per_split, min(n, (k + 1) * tokens_per_split)
                items = (
                    ()
                    if lo >= hi
                    else (
                        R.WorkItem(
                            s,
                            h,
                            k if num_splits > 1 else None,
                            (s, s + 1),
                            (n - 1, n),
                            lo,
                            hi,
                            n - 1,
                            R.tiles_of(lo, hi, block_n),
                            R.table_walk(tables[s], lo, hi, block_size),
                        ),
                    )
                )
                programs.append(R.ProgramRecord((s, h, k), items))
    grid = (len(lens), num_kv_heads, num_splits)
    R.add(
        R.LaunchRecord(
            "paged_decode_kernel",
            "decode",
            grid,
            block_size,
            (("BLOCK_N", block_n), ("NUM_SPLITS", num_splits)),
            tuple(programs),
            False,
        )
    )
    if num_splits > 1:
        group = num_heads // num_kv_heads
        reduce = tuple(
            R.ProgramRecord((s, h, 0), (R.WorkItem(s, h // group, None, (s, s + 1), (n - 1, n), 0, 0, 0, (), ()),))
            for s, n in enumerate(lens)
            for h in range(num_heads)
        )
        R.add(
            R.LaunchRecord(
                "paged_decode_reduce_kernel",
                "reduce",
                (len(lens), num_heads, 1),
                block_size,
                (("NUM_SPLITS", num_splits),),
                reduce,
                False,
            )
        )


if __name__ == "__main__":
    from functools import partial
    from typing import Any

    from pykv_kernels import reference
    from pykv_kernels.harness import KernelCase, Target, run_main
    from pykv_kernels.testing import make_paged_case

    def decode_case(t: Target) -> KernelCase:
        shape: dict[str, Any] = t.pick(
            dict(num_seqs=64, num_heads=32, num_kv_heads=8, head_dim=128, block_size=16, max_len=4096),
            dict(num_seqs=3, num_heads=4, num_kv_heads=2, head_dim=32, block_size=5, max_len=40),
        )
        c = make_paged_case(**shape, dtype=t.dtype, device=t.device, decode=True, seed=0)
        args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
        kv_bytes = 2 * c.seq_lens.sum().item() * shape["num_kv_heads"] * shape["head_dim"] * c.k_cache.element_size()
        shapes = f"{shape['num_seqs']} requests of up to {shape['max_len']} tokens, block_size {shape['block_size']}"
        return KernelCase(
            "paged_decode",
            shapes,
            lambda: paged_decode_attention(*args),
            lambda: reference.paged_decode_attention(*args),
            tol=t.pick(2e-2, 1e-5),
            work=kv_bytes / 1e9,
            unit="GB/s of K/V read",
            checks={f"num_splits={n}": partial(launch_decode, *args, num_splits=n) for n in (1, 3)},
        )

    run_main(decode_case)
