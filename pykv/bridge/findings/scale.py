"""The server's own figures for the advice: its gpu-memory-utilization as read (else the release default, said so),
the running count its KV cache held, how the batch shrank while the queue grew. Read from the evidence, never from
the lab's scaled replay."""

from __future__ import annotations

from pykv.bridge.base.records import Sample
from pykv.bridge.base.release_guess import ReleaseGuess
from pykv.bridge.findings.evidence import KV_FULL, Evidence

GMU_TOP = 0.95  # the highest the optimization guide's advice goes; above it the activations' headroom is gone


def crowded(ev: Evidence) -> list[Sample]:
    """Samples with the GPU KV cache full while requests run and others wait: saturation with a queue."""
    return [
        s
        for s in ev.batch_samples()
        if s.gpu_kv_usage is not None and s.gpu_kv_usage >= KV_FULL and (s.waiting or 0) > 0 and (s.running or 0) > 0
    ]


def shrinking(during: list[Sample]) -> str | None:
    """'running fell from 96 to 52 while waiting rose from 20 to 768' across ``during`` (None: it did not): what a
    preemption does (a running request goes back to the queue), seen from outside."""
    runs = [s for s in during if s.running is not None and s.waiting is not None]
    if len(runs) < 2:
        return None
    first, last = runs[0], runs[-1]
    if last.running >= first.running or last.waiting <= first.waiting:  # type: ignore[operator]
        return None
    fell = f"running fell from {first.running} to {last.running}"
    return f"{fell} while waiting rose from {first.waiting} to {last.waiting}"


def default_gmu(release: ReleaseGuess) -> str:
    """vllm/config.py CacheConfig (0.4.x to 0.10.x: 0.90); vllm/config/cache.py (0.20.0 and later: 0.92)."""
    newer = release.at_least("0.20.0")
    span = release.low if release.low == release.high else f"{release.low}-{release.high}"
    if newer is None:
        return "0.90, 0.92 from 0.20.0"
    return ("0.92" if newer else "0.90") + (f" in {span}" if release.low else "")


def gpu_memory_text(ev: Evidence | None, release: ReleaseGuess) -> str:
    read = ev.config.gpu_memory_utilization if ev is not None else None
    if read is None:
        return (
            f"raise --gpu-memory-utilization to {GMU_TOP:.2f} for more KV blocks (not read from this server; the "
            f"default is {default_gmu(release)})"
        )
    if read >= GMU_TOP:
        return f"your --gpu-memory-utilization {read:g} is at the top already: the KV cache grows by the next steps"
    low = max(0.90, round(read + 0.05, 2))
    target = f"{low:.2f}-{GMU_TOP:.2f}" if low < GMU_TOP else f"{GMU_TOP:.2f}"
    return f"raise your --gpu-memory-utilization {read:g} -> {target} for more KV blocks"


def held_running(ev: Evidence) -> tuple[int, bool, str] | None:
    """(running count, about it or below it, why) for --max-num-seqs: the most requests running in an interval that
    counted no preemption with the cache nearly full (about it); else below the fewest that still preempted; else
    the fewest running while it was full with a queue (what preemption shrank the batch to); None without a
    saturated sample. V0's per-interval counts come from a warning printed once per 50, so a zero there is no proof
    of none: V0 is read by the KV cache alone."""
    samples = ev.batch_samples()
    preempting = [s.running for s in samples if s.preemptions and s.running]
    if not ev.warnings and preempting:
        calm = [s.running for s in samples if s.preemptions == 0 and s.running and (s.gpu_kv_usage or 0) >= 0.8]
        if calm and max(calm) < min(preempting):
            return max(calm), True, "the most requests running in an interval without a preemption, from the timeline"
        return min(preempting), False, f"{min(preempting)} running still preempted"
    full = [s.running for s in crowded(ev) if s.running]
    if not full:
        return None
    if min(full) == max(full):
        return max(full), False, f"{max(full)} running filled the KV cache with requests waiting"
    return min(full), True, "the fewest running while it was full, from the timeline"


def max_num_seqs_text(ev: Evidence | None) -> str:
    held = held_running(ev) if ev is not None else None
    read = ev.config.max_num_seqs if ev is not None else None
    frm = f"from {read} " if read else ""
    if held is None:
        return f"lower --max-num-seqs {frm}(or --max-num-batched-tokens) so the running batch fits the KV cache"
    count, about, why = held
    if about:
        return (
            f"lower --max-num-seqs {frm}to about {count}: the running count your KV cache held ({why}); "
            "or lower --max-num-batched-tokens"
        )
    return f"lower --max-num-seqs {frm}below {count}: {why} (or lower --max-num-batched-tokens)"


def tensor_parallel_text(ev: Evidence | None) -> str:
    tp = ev.config.tensor_parallel_size if ev is not None else None
    now = f"your {tp} -> {tp * 2}" if tp else "not read from this server; e.g. 1 -> 2"
    return f"raise --tensor-parallel-size ({now}): the weights shard across GPUs and each keeps more memory for KV"
