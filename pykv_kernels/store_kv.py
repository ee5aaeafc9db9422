"""KV store (vLLM's ``reshape_and_cache``): write this step's new K and V rows into their cache slots.

Each new token ``t`` has a flat slot ``slot_mapping[t]`` in the paged cache::

    slot  = block * block_size + offset
            |                    |
            |                    +-- row inside the block:  slot % block_size
            +-- physical block id:   slot // block_size

    key[t, h, :]  ->  k_cache[slot // block_size, slot % block_size, h, :]
    value[t, h, :] -> v_cache[slot // block_size, slot % block_size, h, :]

Pseudocode, one program per (tile of BLOCK_T tokens, KV head)::

    slots = slot_mapping[t0 : t0 + BLOCK_T]                  # (BLOCK_T,)
    rows  = key[t0 : t0 + BLOCK_T, h, :]                     # (BLOCK_T, head_dim)
    k_cache[slots // block_size, slots % block_size, h, :] = rows    (same for V)

Under Triton's interpreter (a CPU) the launcher picks ``store_rows_kernel`` where the layout allows (the
engine's always does): the same writes over a (slot, row) view, every KV head of a token in one row and up
to 512 tokens a program, in half the interpreted operations.

Pure data movement: no arithmetic on the values, only a cast to the cache dtype, so bf16 is safe
even under Triton's interpreter. Run ``python -m pykv_kernels.store_kv`` for the check and benchmark.
"""

from __future__ import annotations

import torch

from pykv_kernels import launch_record
from pykv_kernels.launch_utils import check_cache, check_float_dtype, next_pow2

# triton and tl only via triton_utils, never `import triton` here: it switches the interpreter on first
from pykv_kernels.triton_utils import interpreted, tl, triton


@triton.jit
def store_kv_kernel(
    key_ptr,
    value_ptr,  # (num_tokens, num_kv_heads, head_dim)
    k_cache_ptr,
    v_cache_ptr,  # (num_blocks, block_size, num_kv_heads, head_dim)
    slot_mapping_ptr,  # (num_tokens,) int64
    num_tokens,
    stride_kt,
    stride_kh,
    stride_kd,  # key
    stride_vt,
    stride_vh,
    stride_vd,  # value
    stride_cb,
    stride_co,
    stride_ch,
    stride_cd,  # k_cache and v_cache (asserted equal by the launcher)
    HEAD_DIM: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,  # tokens per cache block (any positive integer)
    BLOCK_T: tl.constexpr,  # tokens per program
    BLOCK_D: tl.constexpr,  # head_dim padded to a power of two
):
    pid_t = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    offs_t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)  # (BLOCK_T,)
    offs_d = tl.arange(0, BLOCK_D)  # (BLOCK_D,)
    mask_t = offs_t < num_tokens
    mask = mask_t[:, None] & (offs_d < HEAD_DIM)[None, :]  # (BLOCK_T, BLOCK_D)

    slots = tl.load(slot_mapping_ptr + offs_t, mask=mask_t, other=0).to(tl.int64)  # (BLOCK_T,)
    dst = (slots // BLOCK_SIZE) * stride_cb + (slots % BLOCK_SIZE) * stride_co + head * stride_ch
    dst = dst[:, None] + offs_d[None, :] * stride_cd  # (BLOCK_T, BLOCK_D)

    rows = offs_t.to(tl.int64)[:, None]
    k = tl.load(key_ptr + rows * stride_kt + head * stride_kh + offs_d[None, :] * stride_kd, mask=mask)
    v = tl.load(value_ptr + rows * stride_vt + head * stride_vh + offs_d[None, :] * stride_vd, mask=mask)
    tl.store(k_cache_ptr + dst, k.to(k_cache_ptr.dtype.element_ty), mask=mask)
    tl.store(v_cache_ptr + dst, v.to(v_cache_ptr.dtype.element_ty), mask=mask)


@triton.jit
def store_rows_kernel(
    key_ptr,
    value_ptr,  # (num_tokens, row): a token's K (V) for every KV head, back to back
    k_cache_ptr,
    v_cache_ptr,  # (num_blocks * block_size, row): one row per slot
    slot_mapping_ptr,  # (num_tokens,) int
    num_tokens,
    stride_kt,
    stride_vt,
    stride_cs,  # token stride of key, of value; slot stride of the caches
    ROW: tl.constexpr,  # num_kv_heads * head_dim
    BLOCK_T: tl.constexpr,  # tokens per program
    BLOCK_R: tl.constexpr,  # ROW padded to a power of two
):
    """The CPU configuration of the store: the same writes as ``store_kv_kernel`` with a cache whose
    (block, offset) and (head, dim) axes merge into (slot, row), in half the interpreted operations."""
    # int64 from the start: the interpreter re-checks int32 adds and multiplies for overflow (see paged_batched.py)
    offs_t = tl.program_id(0).to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T).to(tl.int64)  # (BLOCK_T,)
    offs_r = tl.arange(0, BLOCK_R).to(tl.int64)[None, :]  # (1, BLOCK_R)
    mask = (offs_t < num_tokens)[:, None] & (offs_r < ROW)  # (BLOCK_T, BLOCK_R)
    slots = tl.load(slot_mapping_ptr + offs_t, mask=offs_t < num_tokens, other=0).to(tl.int64)
    dst = slots[:, None] * stride_cs + offs_r  # (BLOCK_T, BLOCK_R)
    rows = offs_t[:, None]
    k = tl.load(key_ptr + rows * stride_kt + offs_r, mask=mask)
    v = tl.load(value_ptr + rows * stride_vt + offs_r, mask=mask)
    tl.store(k_cache_ptr + dst, k.to(k_cache_ptr.dtype.element_ty), mask=mask)
    tl.store(v_cache_ptr + dst, v.to(v_cache_ptr.dtype.element_ty), mask=mask)


def store_kv(
    key: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
    value: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
    k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,  # (num_tokens,) int, flat slot of each token
) -> None:
    """Write each token's K and V rows into its cache slot; same contract as ``reference.store_kv``."""
    check_cache(k_cache, v_cache)
    _, block_size, num_kv_heads, head_dim = k_cache.shape
    num_tokens = key.shape[0]
    assert key.shape == value.shape == (num_tokens, num_kv_heads, head_dim), (
        f"key/value must be (num_tokens, {num_kv_heads}, {head_dim}); got {tuple(key.shape)}, {tuple(value.shape)}"
    )
    check_float_dtype(key, "key")
    check_float_dtype(value, "value")
    assert slot_mapping.shape == (num_tokens,), f"slot_mapping must be ({num_tokens},); got {tuple(slot_mapping.shape)}"
    assert not slot_mapping.dtype.is_floating_point, f"slot_mapping must be integer; got {slot_mapping.dtype}"
    assert key.device == value.device == k_cache.device == slot_mapping.device, "all tensors must share a device"
    if num_tokens == 0:
        return
    block_t = 16
    if interpreted():  # the CPU: as few programs as possible (the interpreter's cost is per program)
        block_t = min(512, next_pow2(num_tokens))
        if _slot_rows(key, value, k_cache):
            grid = (triton.cdiv(num_tokens, block_t), 1)
            row = num_kv_heads * head_dim
            store_rows_kernel[grid](
                key,
                value,
                k_cache,
                v_cache,
                slot_mapping,
                num_tokens,
                key.stride(0),
                value.stride(0),
                k_cache.stride(1),
                ROW=row,
                BLOCK_T=block_t,
                BLOCK_R=next_pow2(row),
            )
            if launch_record.recording():
                launch_record.add(
                    _record(grid, block_t, block_size, slot_mapping, heads_merged=True, kernel="store_rows_kernel")
                )
            return
    grid = (triton.cdiv(num_tokens, block_t), num_kv_heads)
    store_kv_kernel[grid](
        key,
        value,
        k_cache,
        v_cache,
        slot_mapping,
        num_tokens,
        *key.stride(),
        *value.stride(),
        *k_cache.stride(),
        HEAD_DIM=head_dim,
        BLOCK_SIZE=block_size,
        BLOCK_T=block_t,
        BLOCK_D=next_pow2(head_dim),
    )
    if launch_record.recording():
        launch_record.add(_record(grid, block_t, block_size, slot_mapping, heads_merged=False))


def _slot_rows(key, value, k_cache) -> bool:
    """Whether a token's heads are one contiguous row in key, value and the cache, and slots evenly strided."""
    _, block_size, heads, dim = k_cache.shape
    flat = all(t.stride(-1) == 1 and t.stride(-2) == dim for t in (key, value, k_cache))
    return flat and k_cache.stride(0) == block_size * k_cache.stride(1)


def _record(
    grid, block_t: int, block_size: int, slot_mapping: torch.Tensor, heads_merged: bool, kernel: str = "store_kv_kernel"
):
    """Each program's tokens and the blocks it wrote (from the slot mapping it was given)."""
    slots = slot_mapping.tolist()
    programs = []
    for t in range(grid[0]):
        lo, hi = t * block_t, min(len(slots), (t + 1) * block_t)
        blocks = launch_record.runs([s // block_size for s in slots[lo:hi]])
        for h in range(grid[1]):
            item = launch_record.WorkItem(
                None, None if heads_merged else h, None, (lo, hi), (lo, hi), 0, 0, 0, (), blocks
            )
            programs.append(launch_record.ProgramRecord((t, h, 0), (item,)))
    return launch_record.LaunchRecord(
        kernel, "store", launch_record.grid3(grid), block_size, (("BLOCK_T", block_t),), tuple(programs), False
    )


if __name__ == "__main__":
    from pykv_kernels import reference
    from pykv_kernels.harness import KernelCase, Target, run_main

    def store_case(t: Target) -> KernelCase:
        num_blocks, block_size, kv_heads, head_dim = t.pick((4096, 16, 8, 128), (16, 5, 2, 32))
        num_tokens = t.pick(8192, 19)
        key = torch.randn(num_tokens, kv_heads, head_dim, dtype=t.dtype, device=t.device)
        value = torch.randn_like(key)
        slots = torch.randperm(num_blocks * block_size, device=t.device)[:num_tokens]
        caches = torch.full(
            (2, 2, num_blocks, block_size, kv_heads, head_dim), float("nan"), dtype=t.dtype, device=t.device
        )  # (implementation, K/V, ...): untouched slots stay NaN

        def into(store, cache):  # run one implementation into its own K/V cache pair; compare the caches
            return lambda: (store(key, value, cache[0], cache[1], slots), cache)[1]

        moved = 2 * 2 * key.numel() * key.element_size()  # read K and V, write K and V
        return KernelCase(
            "store_kv",
            f"{num_tokens} tokens, block_size {block_size}",
            into(store_kv, caches[0]),
            into(reference.store_kv, caches[1]),
            tol=0.0,
            work=moved / 1e9,
            unit="GB/s",
        )

    run_main(store_case)
