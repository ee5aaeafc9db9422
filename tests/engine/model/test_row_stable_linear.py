"""The engine's linear layers: a row's output is bitwise the same alone, in any batch, at any position
(greedy identity under preemption rests on it; tests/engine/test_parallel_sampling.py has the engine-level case)."""

from __future__ import annotations

import pytest
import torch

from pykv.engine.model.row_stable_linear import ROWS_PER_TILE, RowStableLinear, row_stable_linear


@torch.inference_mode()  # as the engine runs it
@pytest.mark.parametrize(
    "in_features, out_features, bias", [(256, 704, False), (704, 256, False), (96, 40, True), (256, 4096, False)]
)
def test_a_row_is_bitwise_the_same_in_any_batch(in_features, out_features, bias):
    torch.manual_seed(in_features)
    layer = RowStableLinear(in_features, out_features, bias=bias)
    rows = torch.randn(3 * ROWS_PER_TILE + 5, in_features)
    alone = [layer(rows[i : i + 1]) for i in range(len(rows))]
    for batch in (2, 3, ROWS_PER_TILE, ROWS_PER_TILE + 1, len(rows) - 1):
        for start in (0, 1, len(rows) - batch):  # the rows at other tile positions, beside other rows
            got = layer(rows[start : start + batch])
            for i in range(batch):
                assert torch.equal(got[i : i + 1], alone[start + i]), (batch, start, i)


@torch.inference_mode()
def test_it_computes_the_linear_map():
    torch.manual_seed(0)
    x, w, b = torch.randn(13, 64), torch.randn(24, 64), torch.randn(24)
    torch.testing.assert_close(row_stable_linear(x, w, b), x @ w.T + b, atol=1e-5, rtol=1e-5)
    assert row_stable_linear(x[:0], w).shape == (0, 24)
