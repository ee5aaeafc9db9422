"""Findings about KV capacity: preemption storms, swap, start-up capacity, and slowness KV does not explain."""

from __future__ import annotations

from pykv.bridge.findings.evidence import KV_FAR_FROM_FULL, KV_FULL, Evidence, Finding
from pykv.bridge.findings.fixes import fix_text

MAX_EVIDENCE = 5
STORM_FIXES = ("gpu_memory", "max_num_seqs", "swap", "prefix_caching", "chunked_prefill")


def preemption_storm(ev: Evidence) -> Finding | None:
    full = [s for s in ev.samples if s.gpu_kv_usage is not None and s.gpu_kv_usage >= KV_FULL]
    preempting = [s for s in full if s.preemptions]
    total = ev.preemptions_at_least()
    if total == 0 and not ev.preemptions_counted:
        return uncounted_storm(ev, full)
    if not full or total == 0 or (len(preempting) < 2 and ev.cumulative_preemptions < 50):
        return None
    fell = throughput_fall(ev, preempting or full)
    # counted per interval (samples that carry counts), else by vllm:num_preemptions_total beside a log, else V0's
    # warnings, which come once per 50
    by_counter = not preempting and not ev.warnings
    counted = bool(preempting) or by_counter
    confidence = "high" if counted and fell else "medium" if counted or fell else "low"
    how = (
        "preemptions counted per interval"
        if preempting
        else "preemptions counted by vllm:num_preemptions_total"
        if by_counter
        else "V0 prints every 50th preemption only"
    )
    why = how + (", and generation throughput fell" if fell else ", but throughput did not visibly fall")
    evidence = [f"vllm:num_preemptions_total rose by {total} over the metrics read"] if by_counter else []
    evidence += [ev.show(s) for s in (preempting or full)[:MAX_EVIDENCE]]
    evidence += [
        f"line {w.line}: preempted by {w.mode}, total_num_cumulative_preemption={w.cumulative}" for w in ev.warnings[:2]
    ]
    evidence += [fell] if fell else []
    return Finding(
        "preemption_storm",
        f"Preemption storm: at least {total} preemptions with the KV cache full",
        confidence,
        why,
        evidence,
        fix_text(ev.release, STORM_FIXES),
    )


def uncounted_storm(ev: Evidence, full: list) -> Finding | None:
    """A V1 log alone cannot count preemptions: no line per preemption, and the stats line's "Preemptions: N" is
    never printed (0.11.1 to 0.34.0 v1/metrics/loggers.py LoggingStatLogger.log: _update_stats resets the count
    before the check). Its pattern still shows: the KV cache full while requests wait, line after line."""
    if ev.release.engine != "v1":
        return None
    crowded = [s for s in full if (s.waiting or 0) > 0 and (s.running or 0) > 0]
    if len(crowded) < 2:
        return None
    fell = throughput_fall(ev, crowded)
    return Finding(
        "preemption_storm",
        "Likely preemption storm: the KV cache full while requests wait",
        "medium" if fell else "low",
        "V1's stats line prints no preemption count; the KV cache stayed full with requests waiting"
        + (", and generation throughput fell" if fell else ""),
        [ev.show(s) for s in crowded[: MAX_EVIDENCE - 2]]
        + ([fell] if fell else [])
        + ["to count them, give the server's /metrics twice, before and after (vllm:num_preemptions_total)"],
        fix_text(ev.release, STORM_FIXES),
    )


def throughput_fall(ev: Evidence, during: list) -> str | None:
    """Evidence that generation throughput fell below 80% of its peak in the samples ``during`` the trouble (None:
    it did not, or nothing says)."""
    peak = max((s.gen_tps for s in ev.samples if s.gen_tps is not None), default=None)
    low = min((s.gen_tps for s in during if s.gen_tps is not None), default=None)
    if peak is None or low is None or low >= 0.8 * peak:
        return None
    return f"generation throughput fell from {peak:.1f} to {low:.1f} tok/s"


def swap_space_exhausted(ev: Evidence) -> Finding | None:
    if ev.release.engine == "v1":
        return None
    full = [s for s in ev.samples if s.cpu_kv_usage is not None and s.cpu_kv_usage >= KV_FULL]
    if not full or ev.preemptions_at_least() == 0 and not any(s.swapped for s in full):
        return None
    return Finding(
        "swap_space_exhausted",
        "Swap space exhausted: CPU KV cache full while preempting",
        "high",
        "CPU KV usage read from the stats lines",
        [ev.show(s) for s in full[:MAX_EVIDENCE]],
        fix_text(
            ev.release,
            ("gpu_memory", "max_num_seqs", "swap"),
            lead="Swapped groups wait for CPU blocks, and recompute when there are none:",
        ),
    )


def swap_never_used(ev: Evidence) -> Finding | None:
    if ev.release.engine == "v1" or not ev.warnings:
        return None
    cpu_blocks = [f.num_cpu_blocks for f in ev.startup if f.num_cpu_blocks]
    swap_seen = any(s.swapped for s in ev.samples) or any((s.cpu_kv_usage or 0) > 0 for s in ev.samples)
    if not cpu_blocks or swap_seen or any(w.mode == "SWAP" for w in ev.warnings):
        return None
    evidence = [f"start-up: {cpu_blocks[0]} CPU blocks of swap space configured"]
    evidence += [f"line {w.line}: request {w.request_id} preempted by RECOMPUTE" for w in ev.warnings[:3]]
    return Finding(
        "swap_never_used",
        "Swap space configured but never used: V0 recomputes single-sequence requests",
        "high" if len(ev.warnings) >= 2 else "medium",
        "every preemption warning says RECOMPUTE and swapped stayed 0 (V0 swaps only groups of n>1)",
        evidence,
        fix_text(
            ev.release,
            ("gpu_memory", "max_num_seqs", "prefix_caching"),
            lead="--swap-space only helps n>1 / beam search; free that CPU memory or:",
        ),
    )


def max_model_len_exceeds_kv(ev: Evidence) -> Finding | None:
    errors = [f for f in ev.startup if f.startup_error]
    below = [f for f in ev.startup if f.max_concurrency is not None and f.max_concurrency < 1.0]
    if not errors and not below:
        return None
    evidence = [
        f"line {f.lines[0]}: max_model_len {f.max_model_len} > KV capacity {f.kv_cache_tokens} tokens"
        for f in errors[:MAX_EVIDENCE]
    ]
    evidence += [
        f"line {f.lines[-1]}: maximum concurrency {f.max_concurrency:.2f}x for {f.max_model_len} tokens"
        for f in below[:MAX_EVIDENCE]
    ]
    return Finding(
        "max_model_len_exceeds_kv",
        "max_model_len does not fit the KV cache",
        "high",
        "the server's own start-up line says so",
        evidence,
        fix_text(ev.release, ("gpu_memory",), lead="Lower --max-model-len, or") + "; or add GPUs "
        "(--tensor-parallel-size)",
    )


def max_num_seqs_above_capacity(ev: Evidence) -> Finding | None:
    concurrency = [f.max_concurrency for f in ev.startup if f.max_concurrency]
    if not concurrency:
        return None
    capacity = min(concurrency)
    running = max((s.running for s in ev.samples if s.running is not None), default=None)
    tried = max(running or 0, ev.config.max_num_seqs or 0)
    if tried < 4 * capacity or ev.preemptions_at_least() == 0 and (running or 0) < 4 * capacity:
        return None
    confidence = "medium" if ev.preemptions_at_least() else "low"
    evidence = [f"start-up: maximum concurrency {capacity:.2f}x at max_model_len"]
    if running is not None:
        evidence.append(f"running peaked at {running} requests")
    if ev.config.max_num_seqs:
        evidence.append(f"max_num_seqs={ev.config.max_num_seqs}")
    return Finding(
        "max_num_seqs_above_capacity",
        "The batch the server tries is far above what the KV cache holds",
        confidence,
        "concurrency counts full-length requests; shorter ones fit more, so this is a ceiling",
        evidence,
        fix_text(ev.release, ("gpu_memory", "max_num_seqs")),
    )


def kv_not_the_bottleneck(ev: Evidence) -> Finding | None:
    slow = [
        s
        for s in ev.samples
        if s.gpu_kv_usage is not None
        and s.gpu_kv_usage < KV_FAR_FROM_FULL
        and ((s.waiting or 0) > 0 or (s.running and s.gen_tps == 0.0))
    ]
    if len(slow) < 3 or any((s.gpu_kv_usage or 0) >= KV_FULL for s in ev.samples):
        return None
    stuck = any(s.running and s.gen_tps == 0.0 for s in slow)
    title = "Stuck with KV far from full" if stuck else "Requests wait while KV is far from full"
    return Finding(
        "kv_not_the_bottleneck",
        title,
        "medium",
        f"{len(slow)} samples wait or stall below {KV_FAR_FROM_FULL:.0%} KV usage; KV never reached {KV_FULL:.0%}",
        [ev.show(s) for s in slow[:MAX_EVIDENCE]],
        "More KV will not help: raise --max-num-seqs / --max-num-batched-tokens if the batch is capped, "
        "else look at compute (GPU busy), the client's request rate, or a hung worker",
    )
