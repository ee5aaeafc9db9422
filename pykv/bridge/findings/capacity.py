"""Findings about KV capacity: swap, start-up capacity, and slowness KV does not explain (storms: ``storm``)."""

from __future__ import annotations

from pykv.bridge.findings.evidence import KV_FAR_FROM_FULL, KV_FULL, Evidence, Finding
from pykv.bridge.findings.fixes import fix_text

MAX_EVIDENCE = 5


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
            ev,
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
            ev,
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
        fix_text(ev, ("gpu_memory", "tensor_parallel"), lead="Lower --max-model-len, or:"),
    )


def max_num_seqs_above_capacity(ev: Evidence) -> Finding | None:
    concurrency = [f.max_concurrency for f in ev.startup if f.max_concurrency]
    if not concurrency:
        return None
    capacity = min(concurrency)
    batches = ev.batch_samples()  # a data-parallel server: one engine's batch, which max_num_seqs bounds
    running = max((s.running for s in batches if s.running is not None), default=None)
    tried = max(running or 0, ev.config.max_num_seqs or 0)
    never_full = not any((s.gpu_kv_usage or 0) >= KV_FULL for s in batches)
    if tried < 4 * capacity or ev.preemptions_at_least() == 0 and ((running or 0) < 4 * capacity or never_full):
        return None  # shorter requests than max_model_len fit: no preemption and no full cache, no trouble
    confidence = "medium" if ev.preemptions_at_least() else "low"
    evidence = [f"start-up: maximum concurrency {capacity:.2f}x at max_model_len"]
    if running is not None:
        busiest = " on the busiest engine" if ev.engine_samples else ""
        evidence.append(f"running peaked at {running} requests{busiest}")
    if ev.config.max_num_seqs:
        evidence.append(f"max_num_seqs={ev.config.max_num_seqs}")
    return Finding(
        "max_num_seqs_above_capacity",
        "The batch the server tries is far above what the KV cache holds",
        confidence,
        "concurrency counts full-length requests; shorter ones fit more, so this is a ceiling",
        evidence,
        fix_text(ev, ("gpu_memory", "max_num_seqs")),
    )


def kv_not_the_bottleneck(ev: Evidence) -> Finding | None:
    slow = [
        s
        for s in ev.samples
        if s.gpu_kv_usage is not None
        and s.gpu_kv_usage < KV_FAR_FROM_FULL
        and ((s.waiting or 0) > 0 or (s.running and s.gen_tps == 0.0))
    ]
    if len(slow) < 3 or any((s.gpu_kv_usage or 0) >= KV_FULL for s in ev.samples) or ev.window_preemptions():
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
