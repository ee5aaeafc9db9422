"""Recompute vs swap for one victim on the target, by the victim's length: when does copying its KV
out and back over the host link cost less than re-prefilling it?

    recompute(L) = what re-prefilling L tokens adds to a step of ``batch`` decodes at ``context`` (the
                   step runs for them anyway: its weights are read anyway, so a short re-prefill rides
                   on spare compute almost free); with batch 0, the re-prefill alone
    swap(L)      = copy out (d2h) + copy back in (h2d) of L tokens in whole blocks; batched = one copy each
                   way, per-block = one copy per block, layer and K/V (vLLM V0's swap_blocks)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pykv.gpu_model.estimate import Chunk, Estimate

LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True)
class CrossoverCurves:
    target: str
    block_size: int
    batch: int  # decodes running beside the re-prefill
    context: int  # their length
    lengths: list[int]
    recompute_ms: list[float]  # added to the batch's step
    recompute_alone_ms: list[float]
    swap_batched_ms: list[float]
    swap_per_block_ms: list[float]
    batched_from: int | None  # the shortest victim for which batched swap is cheaper (None: never here)
    per_block_from: int | None


def recompute_ms(est: Estimate, tokens: int, batch: int, context: int) -> float:
    decodes = [Chunk(context, 1)] * batch
    return est.forward_cost(decodes + [Chunk(0, tokens)]).total - est.forward_cost(decodes).total


def swap_ms(est: Estimate, tokens: int, block_size: int, per_block: bool) -> float:
    blocks = -(-tokens // block_size)
    return sum(est.kv_copy_ms(blocks * block_size, d, blocks, per_block) for d in ("d2h", "h2d"))


def crossover_length(
    est: Estimate, block_size: int, per_block: bool, longest: int, batch: int = 16, context: int = 512
) -> int | None:
    """The shortest victim (a multiple of the block size, up to ``longest``) whose swap is cheaper."""
    for tokens in range(block_size, longest + 1, block_size):
        if swap_ms(est, tokens, block_size, per_block) < recompute_ms(est, tokens, batch, context):
            return tokens
    return None


def crossover_curves(
    est: Estimate, block_size: int = 16, batch: int = 16, context: int = 512, lengths: Sequence[int] = LENGTHS
) -> CrossoverCurves:
    lengths = [n for n in lengths if n <= est.shape.max_context] or [min(LENGTHS)]
    longest = lengths[-1]
    return CrossoverCurves(
        est.label,
        block_size,
        batch,
        context,
        list(lengths),
        [recompute_ms(est, n, batch, context) for n in lengths],
        [est.prefill_ms(n) for n in lengths],
        [swap_ms(est, n, block_size, False) for n in lengths],
        [swap_ms(est, n, block_size, True) for n in lengths],
        crossover_length(est, block_size, False, longest, batch, context),
        crossover_length(est, block_size, True, longest, batch, context),
    )
