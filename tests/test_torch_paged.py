"""kernels.torch_paged (SDPA, decodes bucketed by length; benchmarked, not the engine's) against the references."""

from __future__ import annotations

import random

import pytest
import torch

from kernels import reference, torch_paged
from kernels.testing import make_paged_case

TOL = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def check(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape and not got.isnan().any()
    tol = TOL[want.dtype]
    torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)


@pytest.mark.parametrize("group, block_size, dtype", [(1, 16, torch.float32), (2, 1, torch.float32),
                                                      (4, 15, torch.float32), (4, 17, torch.bfloat16),
                                                      (2, 5, torch.float16)])
def test_decode_and_mixed_prefill_match_the_references(group, block_size, dtype):
    rng = random.Random(block_size * group)
    seq_lens = [1, block_size, block_size + 1] + [rng.randint(1, 300) for _ in range(6)]  # lengths far apart: buckets
    c = make_paged_case(2 * group, 2, 32, block_size, seq_lens=seq_lens, decode=True, dtype=dtype, seed=group)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
    check(torch_paged.paged_decode_attention(*args), reference.paged_decode_attention(*args))
    query_lens = [rng.randint(1, n) if i % 3 else 1 for i, n in enumerate(seq_lens)]
    c = make_paged_case(2 * group, 2, 32, block_size, seq_lens=seq_lens, query_lens=query_lens, dtype=dtype, seed=3)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    check(torch_paged.paged_prefill_attention(*args), reference.paged_prefill_attention(*args))


def test_buckets_keep_padding_small_and_cover_every_request():
    lengths = [5, 300, 7, 290, 6, 40, 1]
    buckets = torch_paged._buckets(lengths)
    assert sorted(i for b in buckets for i in b) == list(range(len(lengths)))
    for b in buckets:
        keys = max(lengths[i] for i in b) * len(b)
        assert keys - sum(lengths[i] for i in b) <= torch_paged.PAD_SHARE * keys or len(b) == 1
