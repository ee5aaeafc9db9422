"""Paged decode kernel (one-pass and split-K) against the torch reference, through Triton's interpreter.

Each case is one launch whose requests cover the interesting context lengths at once:
1, block_size - 1, block_size, block_size + 1, a one-token tail after a full KV tile, and a random
length. Caches are views into an engine-shaped pool with every unowned slot NaN and blocks handed
out in random order (see ``pykv_kernels.testing``).
"""

from __future__ import annotations

import importlib.util
import random

import pytest
import torch

# Not importorskip("triton"): triton must come through the kernels, which switch the interpreter on first.
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

from pykv_kernels import reference  # noqa: E402
from pykv_kernels.paged_decode import launch_decode, paged_decode_attention  # noqa: E402
from pykv_kernels.testing import kernel_test_device, make_paged_case  # noqa: E402

DEVICE = kernel_test_device()  # CPU through the interpreter; CUDA when run by bench/gpu_check.py
TILE = 16 if DEVICE == "cpu" else 64  # launch_decode's default KV tile (block_n)

TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def context_lengths(block_size: int, seed: int) -> list[int]:
    lengths = {1, block_size, block_size + 1, TILE + 1, random.Random(seed).randint(2, 3 * TILE)}
    if block_size > 1:
        lengths.add(block_size - 1)
    return sorted(lengths)


def check(got: torch.Tensor, want: torch.Tensor) -> None:
    tol = TOL[want.dtype]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert not got.isnan().any(), "the kernel read a slot it should not have (NaN in the output)"
    torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)


# (group size, head_dim, block_size, dtype, num_splits): every group size, head dim, dtype and
# split count appears with several block sizes, including non-powers of two and 1.
CASES = [
    (1, 32, 16, torch.float32, 1),
    (2, 32, 5, torch.float32, 1),
    (4, 64, 1, torch.float32, 1),
    (2, 64, 16, torch.float32, 2),
    (4, 32, 7, torch.float32, 3),
    (1, 64, 4, torch.float32, 8),  # more splits than most requests have tokens: empty splits
    (2, 32, 16, torch.float16, 1),
    (4, 64, 5, torch.float16, 3),
    (1, 16, 4, torch.float16, 2),  # head_dim 16, as in the engine's test models
    (2, 32, 8, torch.bfloat16, 1),
    (4, 32, 3, torch.bfloat16, 4),
]


@pytest.mark.parametrize("group, head_dim, block_size, dtype, num_splits", CASES)
def test_decode_matches_reference(group, head_dim, block_size, dtype, num_splits):
    num_kv_heads = 2
    case = make_paged_case(
        group * num_kv_heads,
        num_kv_heads,
        head_dim,
        block_size,
        seq_lens=context_lengths(block_size, seed=group * head_dim + block_size),
        decode=True,
        dtype=dtype,
        seed=block_size,
        device=DEVICE,
    )
    args = (case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, case.scale)
    check(launch_decode(*args, num_splits=num_splits), reference.paged_decode_attention(*args))


def test_decode_public_launcher_has_the_reference_signature_and_strided_query():
    """The backend entry point (auto splits) on a non-contiguous query, e.g. a slice of a fused QKV."""
    case = make_paged_case(4, 2, 32, 6, seq_lens=[3, 20, 41], decode=True, seed=3, device=DEVICE)
    qkv = torch.randn(3, 8, 32, device=DEVICE)
    query = qkv[:, 2:6]  # (3, 4, 32) with a token stride of 8 * 32
    query.copy_(case.query)
    args = (query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, case.scale)
    check(paged_decode_attention(*args), reference.paged_decode_attention(*args))


def test_decode_small_tiles_and_splits_agree_with_one_pass():
    """Many tiles and many splits on one long-ish request equal the one-pass answer."""
    case = make_paged_case(8, 2, 32, 16, seq_lens=[97], decode=True, seed=5, device=DEVICE)
    args = (case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, case.scale)
    want = reference.paged_decode_attention(*args)
    check(launch_decode(*args, num_splits=1, block_n=32), want)
    check(launch_decode(*args, num_splits=7, block_n=16), want)
