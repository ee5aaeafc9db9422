"""KV store kernel against the torch reference, through Triton's interpreter: bit-exact writes into
exactly the slots of the slot mapping, nothing else touched."""

from __future__ import annotations

import importlib.util

import pytest
import torch

# Not importorskip("triton"): triton must come through the kernels, which switch the interpreter on first.
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

from pykv_kernels import reference  # noqa: E402
from pykv_kernels.store_kv import store_kv  # noqa: E402
from pykv_kernels.testing import kernel_test_device  # noqa: E402

DEVICE = kernel_test_device()  # CPU through the interpreter; CUDA when run by bench/gpu_check.py


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal, NaN where the other is NaN (untouched slots stay NaN)."""
    return bool(torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))


@pytest.mark.parametrize(
    "num_tokens, block_size, head_dim, src_dtype, cache_dtype",
    [
        (1, 16, 32, torch.float32, torch.float32),
        (17, 5, 64, torch.float32, torch.float32),  # tokens over two programs, non-power-of-2 blocks
        (40, 1, 16, torch.float16, torch.float16),
        (23, 7, 32, torch.float32, torch.float16),  # cast to the cache dtype
        (9, 4, 64, torch.bfloat16, torch.bfloat16),  # bf16: pure data movement, exact
    ],
)
def test_store_matches_reference(num_tokens, block_size, head_dim, src_dtype, cache_dtype):
    num_blocks, kv_heads = -(-num_tokens // block_size) + 3, 2
    gen = torch.Generator().manual_seed(num_tokens)
    pool = torch.full(
        (2, 2, num_blocks, block_size, kv_heads, head_dim), float("nan"), dtype=cache_dtype, device=DEVICE
    )
    want = pool.clone()
    key = torch.randn(num_tokens, kv_heads, head_dim, generator=gen).to(DEVICE, src_dtype)
    value = torch.randn(num_tokens, kv_heads, head_dim, generator=gen).to(DEVICE, src_dtype)
    slots = torch.randperm(num_blocks * block_size, generator=gen)[:num_tokens].to(DEVICE)  # scattered, any order
    store_kv(key, value, pool[1, 0], pool[1, 1], slots)
    reference.store_kv(key, value, want[1, 0], want[1, 1], slots)
    assert same(pool, want)


def test_store_strided_rows_and_empty_batch():
    """K and V as slices of one fused projection output (token stride != row size); zero tokens is a no-op."""
    kv_heads, head_dim, block_size = 2, 32, 4
    fused = torch.randn(6, 3 * kv_heads, head_dim, device=DEVICE)
    key, value = fused[:, kv_heads : 2 * kv_heads], fused[:, 2 * kv_heads :]
    cache = torch.full((2, 5, block_size, kv_heads, head_dim), float("nan"), device=DEVICE)
    want = cache.clone()
    slots = torch.tensor([19, 0, 7, 8, 3, 12], device=DEVICE)
    store_kv(key, value, cache[0], cache[1], slots)
    reference.store_kv(key, value, want[0], want[1], slots)
    assert same(cache, want)
    store_kv(key[:0], value[:0], cache[0], cache[1], slots[:0])
    assert same(cache, want)
