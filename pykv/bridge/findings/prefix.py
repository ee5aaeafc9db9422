"""Findings about the prefix cache and V1's re-preemption of long chunked prefills."""

from __future__ import annotations

from pykv.bridge.findings.evidence import KV_FULL, Evidence, Finding
from pykv.bridge.findings.fixes import fix_text

# vllm/v1/core/kv_cache_manager.py: from 0.11.1 get_computed_blocks records hits of preempted requests apart
# (`preempted=request.num_preemptions > 0`); before, a recomputed request's own blocks counted as prefix hits.
PREEMPTED_HITS_FIX = "0.11.1"
RETHRASH_FIXED = "0.33.0"
HIT_NEAR_ZERO = 0.02


def prefix_cache_not_hitting(ev: Evidence) -> Finding | None:
    rates = [s for s in ev.samples if s.prefix_hit_rate is not None and (s.running or s.prompt_tps)]
    if not rates or max(s.prefix_hit_rate or 0.0 for s in rates) >= HIT_NEAR_ZERO:
        return None
    expected = ev.shared_prefix_requests
    if expected == 0 or (expected is None and ev.config.enable_prefix_caching is not True):
        return None
    evidence = [ev.show(s) for s in rates[:3]]
    if expected:
        evidence.append(f"trace: {expected} of {ev.trace_requests} requests share a first KV block with another")
    block = next((f.block_size for f in ev.startup if f.block_size), ev.config.block_size)
    lead = (
        f"Only whole blocks are cached: a shared prefix shorter than one block ({block or 16} tokens) never hits; "
        "keep the shared text byte-identical at the very start, then"
    )
    return Finding(
        "prefix_cache_not_hitting",
        # sharing is only known from a trace: without one the title does not claim it
        "Prefix cache hits near 0% though prefixes are shared" if expected else "Prefix cache hits near 0%",
        "high" if expected else "low",
        "the trace shows shared prefix blocks"
        if expected
        else "prefix caching is on but no trace says prefixes are shared",
        evidence,
        fix_text(ev, ("prefix_caching",), lead=lead),
    )


def prefix_hit_inflated_by_recompute(ev: Evidence) -> Finding | None:
    hits = [s for s in ev.samples if s.prefix_hit_rate]
    full = [s for s in ev.samples if (s.gpu_kv_usage or 0) >= KV_FULL]
    if not hits or ev.preemptions_at_least() == 0 or not full:
        return None
    fixed = ev.release.at_least(PREEMPTED_HITS_FIX) if ev.release.engine == "v1" else False
    if fixed:
        return None
    confidence = "high" if fixed is False and ev.release.engine is not None else "medium"
    why = (
        f"{ev.release.text} counts a recomputed request's own blocks as prefix hits"
        if fixed is False
        else f"the release range straddles {PREEMPTED_HITS_FIX}, where V1 stopped counting them"
    )
    evidence = [ev.show(s) for s in hits[:3]] + [f"at least {ev.preemptions_at_least()} preemptions"]
    return Finding(
        "prefix_hit_inflated_by_recompute",
        "Prefix hit rate inflated by recomputed preemptions",
        confidence,
        why,
        evidence,
        f"Read the hit rate as an upper bound; V1 {PREEMPTED_HITS_FIX}+ reports preempted requests' hits "
        "apart. Cut the preemptions first: " + fix_text(ev, ("gpu_memory", "max_num_seqs")),
    )


def chunked_prefill_rethrash(ev: Evidence) -> Finding | None:
    if ev.release.engine != "v1" or ev.release.at_least(RETHRASH_FIXED) is True:
        return None
    prefix_off = ev.config.enable_prefix_caching is False or not any(s.prefix_hit_rate for s in ev.samples)
    if not prefix_off:
        return None
    repeated = _requests_preempted_twice(ev.preemption_histogram)
    small_batch = [s for s in ev.samples if s.preemptions and (s.running or 0) <= 2 and (s.waiting or 0) > 0]
    if not repeated and len(small_batch) < 3:
        return None
    evidence = []
    if repeated:
        evidence.append(f"vllm:request_num_preemptions: {repeated:,.0f} finished request(s) were preempted 2+ times")
    evidence += [ev.show(s) for s in small_batch[:4]]
    # The histogram alone cannot tell a re-preempted prefill from decodes preempted twice as they grow: only a batch
    # of one or two long requests that keeps being preempted points at the prefill.
    confidence = "high" if repeated and len(small_batch) >= 3 else "medium" if len(small_batch) >= 3 else "low"
    why = {
        "high": "preemptions keep coming with at most 2 requests running, and the per-request histogram shows "
        "requests preempted 2+ times",
        "medium": "preemptions keep coming with at most 2 requests running (V1 before 0.33, no prefix caching: "
        "each retry recomputes the whole prefill)",
        "low": "only the per-request histogram: decode-time preemptions also preempt a request 2+ times; a batch of "
        "1-2 long requests preempted again and again would show it",
    }[confidence]
    return Finding(
        "chunked_prefill_rethrash",
        "A long chunked prefill " + ("may be" if confidence == "low" else "is") + " preempted again and again",
        confidence,
        why,
        evidence,
        fix_text(
            ev,
            ("gpu_memory", "prefix_caching", "chunked_prefill"),
            lead="With prefix caching on, a preempted prefill resumes from its cached chunks:",
        ),
    )


def _requests_preempted_twice(buckets: dict[float, float]) -> float:
    """Requests with >= 2 preemptions, from the cumulative histogram (le=1 holds those with 0 or 1)."""
    if not buckets:
        return 0.0
    total = buckets.get(float("inf"), max(buckets.values()))
    at_most_one = max((count for bound, count in buckets.items() if bound <= 1.0), default=0.0)
    return max(total - at_most_one, 0.0)
