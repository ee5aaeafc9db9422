"""Preemption storms and saturation: counted in what was read, counted only since start-up (one scrape), or likely
from the shape a log leaves when it cannot count them (the KV cache full while requests wait, the batch shrinking as
the queue grows). Every finding says what it stands on, and how sure that makes it."""

from __future__ import annotations

from pykv.bridge.findings.evidence import KV_FULL, Evidence, Finding
from pykv.bridge.findings.fixes import fix_text
from pykv.bridge.findings.scale import crowded, shrinking

MAX_EVIDENCE = 5
STORM_SIZE = 50  # V0 warns on the 1st, 51st, ...: 50 is a storm's size whatever the source
MORE_KV = ("gpu_memory", "tensor_parallel", "prefix_caching")


def storm_fixes(ev: Evidence) -> tuple[str, ...]:
    """The tuning order for a storm. V0 swaps only multi-sequence groups (n>1, beam search): size --swap-space only
    where the log shows swapping, never beside a finding that swap space goes unused."""
    swapped = any(s.swapped for s in ev.samples) or any(w.mode == "SWAP" for w in ev.warnings)
    swap = ("swap",) if ev.release.engine == "v1" or swapped else ()
    return ("gpu_memory", "max_num_seqs", "tensor_parallel", *swap, "prefix_caching", "chunked_prefill")


def v0_stretch(ev: Evidence) -> bool:
    """A V0 log without its start-up and without a warning: V0 warns on the 1st, 51st, ... preemption only, so a
    stretch between two warnings can hide up to 49; its zero is not a count."""
    return ev.release.engine == "v0" and not ev.warnings and not ev.startup and ev.since_start_floor() is None


def preemption_storm(ev: Evidence) -> Finding | None:
    if not ev.preemptions_counted or (v0_stretch(ev) and not ev.window_preemptions()):
        return likely_storm(ev)
    if ev.window_preemptions():
        return counted_storm(ev)
    if ev.since_start_floor() and ev.metric_readings <= 1:  # read once: no window to count in
        return storm_since_start(ev)
    return kv_saturated(ev)


def counted_storm(ev: Evidence) -> Finding | None:
    full = [s for s in ev.samples if s.gpu_kv_usage is not None and s.gpu_kv_usage >= KV_FULL]
    total = ev.window_preemptions()
    preempting = [s for s in full if s.preemptions] or [s for s in ev.samples if s.preemptions]
    during = preempting or crowded(ev) or full
    missed = not full and not ev.warnings  # counted, but no reading caught the KV cache full
    fell, shrank = throughput_fall(ev, during), shrinking(crowded(ev))
    big = total >= STORM_SIZE or len(preempting) >= 2
    # a storm-sized count is the finding itself; the KV cache staying full with a queue, the batch shrinking or
    # throughput falling corroborate it
    corroborated = bool(fell or shrank or len(crowded(ev)) >= 2)
    confidence = "high" if big and corroborated else "medium" if big or corroborated else "low"
    if missed:
        confidence = "medium" if big else "low"
    by_counter = not preempting and not ev.warnings
    if ev.warnings:
        how = (
            f"vLLM's own warning ('not enough KV cache space', {len(ev.warnings)} line(s); V0 prints the 1st, "
            f"51st, ... preemption only)"
        )
    elif by_counter:
        how = "preemptions counted by vllm:num_preemptions_total"
    else:
        how = "preemptions counted per interval"
    signals = [text for text in (shrank, fell) if text]
    why = "; ".join([how, *signals] if signals else [how, "throughput did not visibly fall"])
    evidence = [f"vllm:num_preemptions_total rose by {total:,} over the metrics read"] if by_counter else []
    evidence += [ev.show(s) for s in during[:MAX_EVIDENCE]]
    evidence += [
        f"line {w.line}: preempted by {w.mode}, total_num_cumulative_preemption={w.cumulative or '?'}"
        for w in ev.warnings[:2]
    ]
    if ev.warnings and total < STORM_SIZE:
        evidence.append(f"one warning stands for 1 to {STORM_SIZE} preemptions (the next is printed at the 51st)")
    evidence += signals
    if missed:
        evidence.append("no reading caught the KV cache full: the preemptions fell between them")
    plural = "s" if total != 1 else ""
    if missed:
        title = f"Preemptions between the readings: at least {total:,} preemption{plural}"
    elif big:
        title = f"Preemption storm: at least {total:,} preemptions with the KV cache full"
    else:
        title = f"Preemptions with the KV cache full: at least {total:,} preemption{plural}"
    return Finding("preemption_storm", title, confidence, why, evidence, fix_text(ev, storm_fixes(ev)))


def storm_since_start(ev: Evidence) -> Finding | None:
    """A counter read once: a floor since start-up over a span it does not show; the storm is now only if the KV
    cache is full with requests waiting now."""
    floor = ev.since_start_floor() or 0
    now = crowded(ev)[-1:] if ev.samples and ev.samples[-1] in crowded(ev) else []
    source = (
        "vllm:num_preemptions_total"
        if ev.since_start is not None and ev.since_start >= floor
        else "the sum of vllm:request_num_preemptions"
    )
    evidence = [f"{source}: {floor:,} since start-up (read once: a rate needs two readings)"]
    if now:
        cap = ev.config.max_num_seqs
        at_cap = f" (running {now[0].running} = --max-num-seqs {cap})" if cap and now[0].running == cap else ""
        evidence.append(ev.show(now[0]) + at_cap)
        return Finding(
            "preemption_storm",
            f"Preemption storm: at least {floor:,} preemptions since start-up, the KV cache full now",
            "medium",
            f"counted since start-up by {source} over a span one reading does not show; the KV cache is full with "
            "requests waiting now",
            evidence,
            fix_text(ev, storm_fixes(ev)),
        )
    return Finding(
        "preemption_storm",
        f"Preempted since start-up: at least {floor:,} preemptions",
        "low",
        f"counted since start-up by {source}; the KV cache is not full now, so they may be old",
        evidence + [ev.show(s) for s in ev.samples[-1:]],
        "To see whether they go on, read /metrics twice a minute apart: " + fix_text(ev, ("gpu_memory",)),
    )


def likely_storm(ev: Evidence) -> Finding | None:
    """Nothing read counts preemptions: a V1 log (no line per preemption, and the stats line's "Preemptions: N" is
    never printed: 0.11.1 to 0.34.0 v1/metrics/loggers.py LoggingStatLogger.log resets the count before the check),
    or a release before 0.4.3 (no warning, no counter). Their shape still shows: the KV cache full while requests
    wait, the running batch shrinking as the queue grows, throughput falling."""
    full = crowded(ev)
    if not full:
        return None
    fell, shrank = throughput_fall(ev, full), shrinking(full)
    persisted = len(full) >= 2
    confidence = "medium" if persisted and (fell or shrank) else "low"
    if not ev.preemptions_visible:
        cannot = "vLLM before 0.4.3 prints no preemption warning and has no preemption counter"
        hint = "to count them, upgrade to 0.4.3 or later: it warns on every 50th preemption and counts them on /metrics"
    elif ev.preemptions_counted and v0_stretch(ev):
        cannot = "V0 warns on the 1st, 51st, ... preemption only; this stretch of log has no warning, no start-up"
        hint = "to count them, give the log from start-up or the server's /metrics (vllm:num_preemptions_total)"
    elif ev.release.engine == "v1":
        cannot = "V1's stats line prints no preemption count"
        hint = "to count them, give the server's /metrics twice, before and after (vllm:num_preemptions_total)"
    else:
        cannot = "nothing read counts preemptions"
        hint = "to count them, give the server's /metrics (vllm:num_preemptions_total)"
    seen = (
        f"the KV cache stayed full with requests waiting over {len(full)} samples"
        if persisted
        else ("one sample shows the KV cache full with requests waiting")
    )
    why = "; ".join([cannot, seen] + [text for text in (shrank, fell) if text])
    return Finding(
        "preemption_storm",
        "Likely preemption storm: the KV cache full while requests wait",
        confidence,
        why,
        [ev.show(s) for s in full[:3]] + [text for text in (shrank, fell) if text] + [hint],
        fix_text(ev, storm_fixes(ev)),
    )


def kv_saturated(ev: Evidence) -> Finding | None:
    """Preemptions counted and none: requests wait because the KV cache is full, not because they were preempted."""
    full = crowded(ev)
    if len(full) < 2:
        return None
    floor = ev.since_start_floor()
    history = []
    if floor:
        history.append(f"vllm:num_preemptions_total stayed at {floor:,} (since start-up) over the scrapes read")
    return Finding(
        "kv_cache_saturated",
        "KV cache full while requests wait (no preemptions counted)",
        "high" if len(full) >= 3 else "medium",
        f"the KV cache stayed full with requests waiting over {len(full)} samples, and what was read counts "
        "preemptions: none; the queue waits for blocks to free",
        [ev.show(s) for s in full[:MAX_EVIDENCE]] + history,
        fix_text(ev, MORE_KV, lead="The KV cache caps the batch; more KV serves the queue:"),
    )


def throughput_fall(ev: Evidence, during: list) -> str | None:
    """Evidence that generation throughput fell below 80% of its peak in the samples ``during`` the trouble (None:
    it did not, or nothing says)."""
    peak = max((s.gen_tps for s in ev.samples if s.gen_tps is not None), default=None)
    low = min((s.gen_tps for s in during if s.gen_tps is not None), default=None)
    if peak is None or low is None or low >= 0.8 * peak:
        return None
    return f"generation throughput fell from {peak:.1f} to {low:.1f} tok/s"
