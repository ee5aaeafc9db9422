"""Runs every finding rule; each returns a Finding or None."""

from __future__ import annotations

from pykv.bridge.findings.capacity import (
    kv_not_the_bottleneck,
    max_model_len_exceeds_kv,
    max_num_seqs_above_capacity,
    swap_never_used,
    swap_space_exhausted,
)
from pykv.bridge.findings.evidence import Evidence, Finding
from pykv.bridge.findings.prefix import (
    chunked_prefill_rethrash,
    prefix_cache_not_hitting,
    prefix_hit_inflated_by_recompute,
)
from pykv.bridge.findings.storm import preemption_storm

RULES = (
    max_model_len_exceeds_kv,
    preemption_storm,
    swap_space_exhausted,
    swap_never_used,
    max_num_seqs_above_capacity,
    prefix_cache_not_hitting,
    prefix_hit_inflated_by_recompute,
    chunked_prefill_rethrash,
    kv_not_the_bottleneck,
)


def find_all(evidence: Evidence) -> list[Finding]:
    return [finding for rule in RULES for finding in [rule(evidence)] if finding is not None]
