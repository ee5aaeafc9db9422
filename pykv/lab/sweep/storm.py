"""The storm's shape: where a storm's preemption count provably follows the pool size (the Sweep page's band note,
the tests' check that a smaller pool never preempts less)."""

from __future__ import annotations

from dataclasses import dataclass

from pykv.border.vllm_profiles import PROFILES, Admission
from pykv.border.workload import STORM_PRESETS, make_workload
from pykv.engine.kv.kv_cache_manager import cdiv
from pykv.engine.model.loader import LoadedModel
from pykv.lab.sweep.spec import SweepSpec


@dataclass(frozen=True)
class StormShape:
    """How a storm (n equal prompts arriving together, outputs of one fixed length) meets a pool,
    when ``max_num_seqs >= n``, under V1's full-input admission (v0.32, v0.33: :func:`band_applies`).

    Each request ends holding ``blocks_per_request`` blocks, so a pool of P usable blocks carries
    ``P // blocks_per_request`` requests to the end (a pool is given as ``num_gpu_blocks``; under vLLM V1
    ``null_blocks`` = 1 of them is the null block, block 0, which no request holds). Within :attr:`band`,
    recompute preempts exactly ``n - P // blocks_per_request`` times, a count that never falls as the pool shrinks:
    every prompt is admitted at step 0, the outputs grow in lockstep, the last admitted are
    preempted one at a time until the rest fit, and the victims (too big to re-enter while the
    survivors run) come back together afterwards and fit then, so nobody is preempted twice.
    Outside the band this does not hold, and nothing here claims it: below the band victims collide
    again and re-enter out of step, so a bigger pool can preempt more (shipped model, 8 x 96 tokens:
    pool 17 -> 10 preemptions, pool 18 -> 11); swap can preempt more in a bigger pool anywhere,
    because a swapped request returns as soon as its blocks fit and may be preempted again (8 x 48
    tokens: pool 18 -> 6 swaps, pool 19 -> 8). Under vLLM 0.6.3 (V0) recompute does not follow it either: a victim
    comes back as soon as its whole sequence fits beside the watermark and collides again, and V0's append check
    wants a free block even for a decode into a partly filled one (shipped model, 8 x 96 tokens, recompute:
    pool 36 -> 19 preemptions, pool 44 -> 3, pool 48 -> 18, pool 64 = the demand -> 7).
    """

    num_requests: int
    prompt_blocks: int  # blocks one prompt takes at admission
    blocks_per_request: int  # blocks one request holds when it finishes
    null_blocks: int = 0  # blocks the pool keeps back (V1's null block)

    @property
    def demand(self) -> int:
        """The smallest pool that never preempts."""
        return self.num_requests * self.blocks_per_request + self.null_blocks

    def carried(self, pool: int) -> int:
        """Requests a pool holds side by side to their last token."""
        return max(0, pool - self.null_blocks) // self.blocks_per_request

    def recompute_preemptions(self, pool: int) -> int:
        """The count recompute makes within :attr:`band`."""
        return max(0, self.num_requests - self.carried(pool))

    @property
    def band(self) -> range:
        """Pools that admit every prompt at once and fit all the victims together afterwards."""
        lo = self.num_requests * self.prompt_blocks + self.null_blocks
        while self.recompute_preemptions(lo) * self.blocks_per_request > lo - self.null_blocks:
            lo += 1
        return range(lo, self.demand + 1)


def storm_shape(spec: SweepSpec, loaded: LoadedModel) -> StormShape | None:
    """The shape of the spec's workload at its base block size; None unless the workload is a storm."""
    if spec.workload not in STORM_PRESETS:
        return None
    requests = make_workload(spec.workload, seed=spec.seed, **spec.workload_args).requests
    prompt, size = max(len(loaded.encode(r.prompt or "")) for r in requests), spec.base.block_size  # text prompts
    return StormShape(
        len(requests),
        cdiv(prompt, size),
        cdiv(prompt + requests[0].max_tokens, size),
        int(spec.base.profile.null_block),
    )


def band_applies(profile: str) -> bool:
    """Whether :class:`StormShape`'s band holds under ``profile``: V1's full-input admission (proved on v0.33 by the
    tests: every pool of the band). V0 (whole-prompt admission, a watermark) and vLLM 0.10.2's chunk admission let
    victims re-enter early."""
    return PROFILES[profile].admission is Admission.FULL_INPUT
