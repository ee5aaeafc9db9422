"""EngineTotals: the running totals of an engine since it started, kept by the observer from each step's
typed deltas. The Prometheus counters are set from them (``COUNTER_OF``), so a total is read here,
never back from the registry."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pykv.border import metric_names as names
from pykv.border.metric_names import Metric
from pykv.engine.observe.costs import recompute_tax


@dataclass(frozen=True)
class EngineTotals:
    """Totals since the engine started (or, as a step's delta, in one step). Token counts are tokens, times
    are measured seconds on the engine's device. The rule: only ``StepObserver`` adds to them, one step's
    delta at a time (``plus``)."""

    preemptions: int = 0  # pykv's count: every mode, when it happens (aborts included)
    release_preemptions: int = 0  # as the profile's release counts them (V1: delivered with the next output)
    prompt_tokens: int = 0  # as the release counts them (V0: prefill chunks with cached tokens; V1: prompts once)
    generation_tokens: int = 0
    prefill_tokens: int = 0  # computed, re-prefills included, cache hits excluded
    prefix_queries: int = 0  # pykv's: one lookup per admission, re-admissions included (tokens)
    prefix_hits_own: int = 0
    prefix_hits_shared: int = 0
    release_prefix_queries: int = 0  # what the release's prefix-cache counters count
    release_prefix_hits: int = 0
    recomputed_tokens: int = 0
    recompute_s: float = 0.0  # forward time apportioned to re-prefilled tokens
    prefill_s: float = 0.0  # forward time apportioned to all prefill tokens
    swapped_out_bytes: int = 0
    swapped_in_bytes: int = 0
    swap_out_s: float = 0.0
    swap_in_s: float = 0.0
    external_queries: int = 0  # the CPU offloading tier's lookups (0.33's count)
    external_hits: int = 0
    offload_store_bytes: int = 0
    offload_store_s: float = 0.0
    offload_load_bytes: int = 0
    offload_load_s: float = 0.0
    offload_loaded_tokens: int = 0
    offload_refused: int = 0  # store batches the tier refused whole

    def plus(self, delta: "EngineTotals") -> "EngineTotals":
        return EngineTotals(
            **{f.name: getattr(self, f.name) + getattr(delta, f.name) for f in dataclasses.fields(self)}
        )

    @property
    def recompute_tax(self) -> float | None:
        """Re-prefilled share of prefill tokens; None before any prefill."""
        return recompute_tax(self.recomputed_tokens, self.prefill_tokens)

    @property
    def recompute_tax_time(self) -> float | None:
        """The same share of prefill forward time; None before any prefill."""
        return recompute_tax(self.recompute_s, self.prefill_s)

    @property
    def prefix_hits(self) -> int:
        """pykv's hits at admission, own and shared."""
        return self.prefix_hits_own + self.prefix_hits_shared


# Each total and the counter it sets (where the profile exports that counter).
COUNTER_OF: dict[str, Metric] = {
    "preemptions": names.PYKV_NUM_PREEMPTIONS,
    "release_preemptions": names.VLLM_NUM_PREEMPTIONS,
    "prompt_tokens": names.PROMPT_TOKENS,
    "generation_tokens": names.GENERATION_TOKENS,
    "prefill_tokens": names.PREFILL_TOKENS,
    "prefix_queries": names.PREFIX_QUERIES,
    "prefix_hits_own": names.PREFIX_HITS_OWN,
    "prefix_hits_shared": names.PREFIX_HITS_SHARED,
    "release_prefix_queries": names.VLLM_PREFIX_QUERIES,
    "release_prefix_hits": names.VLLM_PREFIX_HITS,
    "recomputed_tokens": names.RECOMPUTED_TOKENS,
    "recompute_s": names.RECOMPUTE_SECONDS,
    "prefill_s": names.PREFILL_SECONDS,
    "swapped_out_bytes": names.SWAPPED_OUT_BYTES,
    "swapped_in_bytes": names.SWAPPED_IN_BYTES,
    "swap_out_s": names.SWAP_OUT_SECONDS,
    "swap_in_s": names.SWAP_IN_SECONDS,
    "external_queries": names.EXTERNAL_QUERIES,
    "external_hits": names.EXTERNAL_HITS,
    "offload_store_bytes": names.OFFLOAD_STORE_BYTES,
    "offload_store_s": names.OFFLOAD_STORE_TIME,
    "offload_load_bytes": names.OFFLOAD_LOAD_BYTES,
    "offload_load_s": names.OFFLOAD_LOAD_TIME,
    "offload_loaded_tokens": names.OFFLOAD_LOADED_TOKENS,
    "offload_refused": names.OFFLOAD_ALLOCATION_FAILURE,
}
assert set(COUNTER_OF) == {f.name for f in dataclasses.fields(EngineTotals)}, "every total sets one counter"
