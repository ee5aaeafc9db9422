"""Paged prefill kernel against the torch reference, through Triton's interpreter.

Each case is one launch over a mixed batch: fresh prompts, chunks continuing a cached prefix
(chunked prefill, prefix-cache hits, recompute), one-token chunks (decodes riding along) and chunks
longer than one query tile, at context lengths around the block size and the KV tile.
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
from pykv_kernels.paged_prefill import launch_prefill, paged_prefill_attention  # noqa: E402
from pykv_kernels.testing import kernel_test_device, make_paged_case  # noqa: E402

DEVICE = kernel_test_device()  # CPU through the interpreter; CUDA when run by bench/gpu_check.py
TILE = 16 if DEVICE == "cpu" else 64  # launch_prefill's default KV tile (block_n)

TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def batch(block_size: int, seed: int) -> tuple[list[int], list[int]]:
    """(seq_lens, query_lens): (cached prefix, new chunk) pairs covering the edge cases."""
    rng = random.Random(seed)
    pairs = [
        (0, 1),  # a one-token prompt
        (0, block_size + 1),  # a fresh prompt just past a block
        (max(block_size - 1, 0), 1),  # a decode row in a mixed batch, context block_size
        (block_size, max(block_size - 1, 1)),  # a chunk after one full cached block
        (TILE, 1),  # one-token tail after a full KV tile
        (rng.randint(1, 2 * TILE), rng.randint(TILE + 1, 2 * TILE)),  # random prefix, two query tiles
    ]
    return [c + q for c, q in pairs], [q for _, q in pairs]


def check(got: torch.Tensor, want: torch.Tensor) -> None:
    tol = TOL[want.dtype]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert not got.isnan().any(), "the kernel read a slot it should not have (NaN in the output)"
    torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)


CASES = [  # (group size, head_dim, block_size, dtype)
    (1, 32, 16, torch.float32),
    (2, 64, 5, torch.float32),
    (4, 32, 1, torch.float32),
    (2, 32, 16, torch.float16),
    (4, 64, 3, torch.float16),
    (1, 16, 4, torch.float32),  # head_dim 16, as in the engine's test models
    (2, 32, 8, torch.bfloat16),
]


@pytest.mark.parametrize("group, head_dim, block_size, dtype", CASES)
def test_prefill_matches_reference(group, head_dim, block_size, dtype):
    num_kv_heads = 2
    seq_lens, query_lens = batch(block_size, seed=group + head_dim + block_size)
    case = make_paged_case(
        group * num_kv_heads,
        num_kv_heads,
        head_dim,
        block_size,
        seq_lens=seq_lens,
        query_lens=query_lens,
        dtype=dtype,
        seed=block_size,
        device=DEVICE,
    )
    args = (case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, case.query_start_loc, case.scale)
    check(paged_prefill_attention(*args), reference.paged_prefill_attention(*args))


@pytest.mark.parametrize("block_m, block_n", [(32, 16), (16, 32)])
def test_prefill_other_tile_shapes(block_m, block_n):
    """Tile shapes change where the unmasked/causal loops split and how requests map to programs."""
    seq_lens, query_lens = [45, 7, 33, 2], [30, 7, 1, 2]
    case = make_paged_case(8, 2, 32, 6, seq_lens=seq_lens, query_lens=query_lens, seed=11, device=DEVICE)
    args = (case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, case.query_start_loc, case.scale)
    check(launch_prefill(*args, block_m=block_m, block_n=block_n), reference.paged_prefill_attention(*args))


def test_prefill_strided_query_and_int64_metadata():
    case = make_paged_case(4, 2, 32, 4, seq_lens=[9, 20], query_lens=[9, 3], seed=2, device=DEVICE)
    wide = torch.randn(case.query.shape[0], 8, 32, device=DEVICE)
    query = wide[:, 4:]  # a non-contiguous view, like a slice of a fused QKV projection
    query.copy_(case.query)
    args = (
        query,
        case.k_cache,
        case.v_cache,
        case.block_tables.long(),
        case.seq_lens.long(),
        case.query_start_loc.long(),
        case.scale,
    )
    check(paged_prefill_attention(*args), reference.paged_prefill_attention(*args))
