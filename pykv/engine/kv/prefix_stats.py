"""Prefix-cache lookups counted per step, handed over as deltas (vLLM V1's ``make_prefix_cache_stats``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrefixCacheStats:
    """Prefix-cache lookups in tokens, one per admission, plus those that did not admit; the observer
    exports what the profile's vLLM release counts."""

    queries: int = 0  # tokens looked up (vLLM: prefix_cache_queries)
    hits: int = 0  # of which found cached (vLLM: prefix_cache_hits)
    hits_own: int = 0  # hits on blocks the same request computed before a preemption
    hits_shared: int = 0  # hits on blocks another request computed
    preempted_queries: int = 0  # of the queries, those by requests preempted before (today's V1 leaves them out)
    preempted_hits: int = 0  # of the hits, those by requests preempted before
    unadmitted_queries: int = 0  # lookups that did not lead to admission (not in the fields above)
    unadmitted_hits: int = 0
    # The CPU offloading tier, looked up after the device cache (vLLM: external_prefix_cache_*): tokens past the
    # local hit, and those found in the tier; re-admissions after a preemption are left out, as 0.33 leaves them.
    external_queries: int = 0
    external_hits: int = 0
