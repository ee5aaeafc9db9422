"""A linear layer whose output row depends only on its input row, not on what else is in the batch.

Greedy output must be the same whether a request decodes alone, beside others, or is recomputed after a
preemption (one long prefill instead of many one-token steps). On a CPU, MKL's sgemm picks its kernel and
its summation order by the number of rows (one row takes the gemv path; 2, 4 and 16 rows differ again),
so a row's logits move in the last bits with the batch, and a greedy near-tie flips (CI found one on the
shipped model). For a fixed shape, though, a row's result is the same at any position in the tile and
beside any other rows. So the rows go through the GEMM in tiles of a fixed height, the last one padded.

vLLM has the same concern and answers it on GPUs with fixed-tile Triton matmuls behind
``VLLM_BATCH_INVARIANT=1`` (0.11.1+, vllm/model_executor/layers/batch_invariant.py,
``linear_batch_invariant``); off by default there. On CUDA this layer is a plain ``nn.Linear``: cuBLAS also
picks kernels by shape, so the GPU path does not promise bitwise greedy identity (the CPU engine does).
"""

from __future__ import annotations

import torch
from torch import nn

# Rows per tile. 8 keeps a decode step's padding small; on the shipped model a storm runs ~30% slower than
# with plain F.linear (bench/bench_row_tiles.py), the price of greedy identity.
ROWS_PER_TILE = 8


def transposed(weight: torch.Tensor) -> torch.Tensor:
    """The GEMM operand of ``weight`` (out, in): (in, out), contiguous on a CPU. MKL's batched sgemm on tile-high
    inputs runs about twice as fast with a contiguous (in, out) operand as with the transposed view of (out, in)
    (the shipped model's lm_head over one tile: 0.46 -> 0.17 ms; its whole decode forward ~15% less); elsewhere
    a view (``nn.functional.linear`` takes the weight as it is)."""
    return weight.t().contiguous() if weight.device.type == "cpu" else weight.t()


def _tile_gemm(tiles: torch.Tensor, weight_t: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    # (tiles, ROWS_PER_TILE, in) @ (in, out), one batched GEMM of tile-sized matrices, each the same kernel
    # (checked at 1 and 2 threads); cheaper than a Python loop over the tiles. torch.matmul would fold them back
    # into one tall GEMM: bmm keeps them apart.
    out = torch.bmm(tiles, weight_t.expand(len(tiles), -1, -1))
    out = out.view(len(tiles) * ROWS_PER_TILE, weight_t.shape[1])
    return out if bias is None else out + bias


def row_stable_linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, weight_t: torch.Tensor | None = None
) -> torch.Tensor:
    """``x @ weight.T + bias`` for a 2-D ``x``, each row computed in a fixed-height tile. ``weight_t``:
    ``transposed(weight)`` where the caller keeps it (the model does); else it is made here."""
    if x.device.type != "cpu":
        return nn.functional.linear(x, weight, bias)
    rows, width = x.shape
    padded_rows = -(-rows // ROWS_PER_TILE) * ROWS_PER_TILE
    # A fresh tensor: torch aligns its allocations to 64 bytes, and every tile starts on such a boundary
    # (MKL's result also depends on the operands' alignment).
    tiles = x.new_zeros(padded_rows // ROWS_PER_TILE, ROWS_PER_TILE, width)
    tiles.view(padded_rows, width)[:rows] = x
    return _tile_gemm(tiles, transposed(weight) if weight_t is None else weight_t, bias)[:rows]


def padded_rows(rows: int, device: torch.device) -> int:
    """Rows rounded up to whole tiles on a CPU (the height ``tiled_linear`` takes); ``rows`` elsewhere."""
    return -(-rows // ROWS_PER_TILE) * ROWS_PER_TILE if device.type == "cpu" else rows


def tiled_linear(x: torch.Tensor, weight_t: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``row_stable_linear`` for an ``x`` already ``padded_rows`` high: a contiguous tensor of its own (so each tile
    starts on a 64-byte boundary, as ``row_stable_linear``'s fresh tiles do), whatever its padding rows hold. The
    model keeps its token rows padded from the embedding on, so a step pads once instead of at every projection;
    the GEMM, its tiles and each row's result are those of ``row_stable_linear``. ``weight_t``: ``transposed``."""
    if x.device.type != "cpu":
        return nn.functional.linear(x, weight_t.t(), bias)
    rows, width = x.shape
    return _tile_gemm(x.view(rows // ROWS_PER_TILE, ROWS_PER_TILE, width), weight_t, bias)  # fails if not tiled


class RowStableLinear(nn.Linear):
    """``nn.Linear`` (same parameters, so checkpoints load as they are) computed by ``row_stable_linear``.
    ``keep_transposed`` (the loader, once the weights are in): the weight becomes a view of its ``transposed``
    copy, so the GEMM operand is made once, not at every call, and memory holds one copy."""

    weight_t: torch.Tensor | None = None  # (in, out); set once by keep_transposed, read-only after

    def keep_transposed(self, weight_t: torch.Tensor | None = None) -> None:
        """``weight_t``: an (in, out) tensor holding this layer's weight (a fused layer's slice); default its own."""
        self.weight_t = transposed(self.weight.detach()) if weight_t is None else weight_t
        self.weight = nn.Parameter(self.weight_t.t(), requires_grad=False)

    @property
    def operand(self) -> torch.Tensor:
        """``weight_t``, for a caller that runs the GEMM itself (``tiled_linear``): after ``keep_transposed``."""
        assert self.weight_t is not None, "keep_transposed() runs once the weights load (CausalLM.prepare_weights)"
        return self.weight_t

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return row_stable_linear(x, self.weight, self.bias, self.weight_t)
