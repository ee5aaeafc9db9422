"""Engine metrics under the names of the profile's vLLM release (plus pykv's own), in a Prometheus
registry per engine, and that release's log lines."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from pykv.border.vllm_profiles import DEFAULT_PROFILE, PROFILES, VllmProfile

prometheus_client.disable_created_metrics()  # as vLLM does: no *_created series
logger = logging.getLogger("pykv")
PREEMPTION_BUCKETS = (0, 1, 2, 4, 8, 16, 32)


class EngineMetrics:
    """The metrics of one engine under the names its vLLM profile exports, plus pykv's own in every profile.
    Counter names get Prometheus' ``_total`` suffix in the exposition (``vllm:num_preemptions_total``),
    exactly as vLLM's do. Gauges and counters a profile's release lacks are not registered at all."""

    def __init__(self, profile: Optional[VllmProfile] = None) -> None:
        p = self.profile = profile or PROFILES[DEFAULT_PROFILE]
        r = self.registry = CollectorRegistry()
        self.running = Gauge("vllm:num_requests_running", "Requests in the RUNNING queue.", registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests in the WAITING queue.", registry=r)
        self.preemptions = Counter(
            "vllm:num_preemptions", "Preemptions, as this vLLM release counts them (V1: when the request next "
            "produces output).", registry=r)
        prompt_help = ("Prefill tokens computed, re-prefills included (V0)." if p.prompt_tokens_include_reprefill
                       else "Prompt tokens, each request's prompt once (V1).")
        self.prompt_tokens = Counter("vllm:prompt_tokens", prompt_help, registry=r)
        self.generation_tokens = Counter("vllm:generation_tokens", "Output tokens generated.", registry=r)
        if p.is_v0:
            self.swapped = Gauge("vllm:num_requests_swapped", "Requests in the SWAPPED queue.", registry=r)
            self.kv_usage = Gauge("vllm:gpu_cache_usage_perc", "Device KV pool usage, 0-1.", registry=r)
            self.cpu_usage = Gauge("vllm:cpu_cache_usage_perc", "CPU swap pool usage, 0-1.", registry=r)
            self.prefix_hit_rate = Gauge("vllm:gpu_prefix_cache_hit_rate", "Prefix-cache hit rate so far, 0-1 "
                                         "(-1: prefix caching off).", registry=r)
            self.cpu_prefix_hit_rate = Gauge("vllm:cpu_prefix_cache_hit_rate", "CPU pool prefix-cache hit rate "
                                             "(-1: prefix caching off; pykv's CPU pool caches nothing).", registry=r)
        else:
            self.kv_usage = Gauge("vllm:kv_cache_usage_perc", "Device KV pool usage, 0-1.", registry=r)
            self.prefix_queries = Counter("vllm:prefix_cache_queries", "Prefix-cache lookups, in tokens.", registry=r)
            self.prefix_hits = Counter("vllm:prefix_cache_hits", "Prefix-cache hits, in tokens.", registry=r)
        if p.has_request_preemptions_histogram:
            self.vllm_request_preemptions = Histogram(
                "vllm:request_num_preemptions", "Preemptions per finished request.", buckets=PREEMPTION_BUCKETS,
                registry=r)
        if p.has_kv_offloading:  # 0.33.0: v1/metrics/loggers.py and the OffloadingConnector's metrics.py
            self.external_queries = Counter(
                "vllm:external_prefix_cache_queries", "Offloading-tier lookups, in tokens past the device hit "
                "(re-admissions after preemption left out, as 0.33 does).", registry=r)
            self.external_hits = Counter(
                "vllm:external_prefix_cache_hits", "Offloading-tier hits, in tokens loaded (re-admissions left out).",
                registry=r)
            self.offload_store_bytes = Counter("vllm:kv_offload_store_bytes", "Bytes stored device -> CPU tier.",
                                               registry=r)
            self.offload_store_time = Counter("vllm:kv_offload_store_time", "Measured store time, seconds.",
                                              registry=r)
            self.offload_load_bytes = Counter("vllm:kv_offload_load_bytes", "Bytes loaded CPU tier -> device.",
                                              registry=r)
            self.offload_load_time = Counter("vllm:kv_offload_load_time", "Measured load time, seconds.", registry=r)
            self.offload_loaded_tokens = Counter(
                "pykv:offload_loaded_tokens", "Tokens loaded from the CPU tier instead of computed, re-admissions "
                "after preemption included.", registry=r)
        # pykv's own, in every profile.
        self.pykv_preemptions = Counter(
            "pykv:num_preemptions", "Preemptions, counted when they happen (any mode).", registry=r)
        self.prefill_tokens = Counter(
            "pykv:prefill_tokens", "Prefill tokens computed, re-prefills included, cache hits excluded.", registry=r)
        self.prefix_queries_all = Counter(
            "pykv:prefix_cache_queries", "Prefix-cache lookups at admission, in tokens (re-admissions after preemption "
            "included).", registry=r)
        self.prefix_hits_own = Counter(
            "pykv:prefix_cache_hits_own", "Hits on blocks the same request computed before its preemption (tokens).",
            registry=r)
        self.prefix_hits_shared = Counter(
            "pykv:prefix_cache_hits_shared", "Hits on blocks another request computed (tokens).", registry=r)
        self.recomputed_tokens = Counter(
            "pykv:recomputed_tokens", "Tokens re-prefilled after recompute preemptions.", registry=r)
        self.recompute_seconds = Counter(
            "pykv:recompute_seconds", "Forward time apportioned to re-prefilled tokens.", registry=r)
        self.prefill_seconds = Counter(
            "pykv:prefill_seconds", "Forward time apportioned to prefill tokens (re-prefills included).", registry=r)
        self.recompute_tax = Gauge(
            "pykv:recompute_tax", "The recompute tax so far: the share of prefill tokens that recomputed tokens "
            "already computed once, 0-1.", registry=r)
        self.recompute_tax_time = Gauge(
            "pykv:recompute_tax_time", "The same share of prefill forward time, 0-1.", registry=r)
        self.swap_out_bytes = Counter("pykv:swapped_out_bytes", "KV bytes copied device -> CPU.", registry=r)
        self.swap_in_bytes = Counter("pykv:swapped_in_bytes", "KV bytes copied CPU -> device.", registry=r)
        self.swap_out_seconds = Counter("pykv:swap_out_seconds", "Measured swap-out copy time.", registry=r)
        self.swap_in_seconds = Counter("pykv:swap_in_seconds", "Measured swap-in copy time.", registry=r)
        self.request_preemptions = Histogram(
            "pykv:request_preemptions", "Preemptions per finished request.", buckets=PREEMPTION_BUCKETS, registry=r)

    def value(self, name: str) -> float:
        """A sample's current value by its exposition name, e.g. ``vllm:num_preemptions_total``."""
        value = self.registry.get_sample_value(name)
        return 0.0 if value is None else value

    def as_dict(self) -> dict[str, float]:
        return {
            sample.name: sample.value
            for family in self.registry.collect()
            for sample in family.samples
            if not sample.name.endswith(("_bucket", "_created"))
        }

    def exposition(self) -> str:
        """Prometheus text format, as a /metrics endpoint would serve it."""
        return generate_latest(self.registry).decode()


def all_metric_names() -> tuple[str, ...]:
    """Every sample name some profile exports (what a lesson may name)."""
    names = {name for p in PROFILES.values() for name in EngineMetrics(p).as_dict()}
    return tuple(sorted(names))


def kv_usage_name(profile: VllmProfile) -> str:
    """The device pool's usage gauge under the profile's name."""
    return "vllm:gpu_cache_usage_perc" if profile.is_v0 else "vllm:kv_cache_usage_perc"


def preemption_log_line(request_id: str, mode: str, total: int) -> str:
    """vLLM V0's preemption warning (vllm/core/scheduler.py, Scheduler._preempt), written for the 1st, 51st,
    101st... preemption with the count including this one."""
    mode_name = "PreemptionMode.SWAP" if mode == "swap" else "PreemptionMode.RECOMPUTE"
    return (
        f"Sequence group {request_id} is preempted by {mode_name} mode because there is not enough KV cache "
        "space. This can affect the end-to-end performance. Increase gpu_memory_utilization or "
        f"tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption={total}"
    )


def sglang_retract_line(num_retracted: int, tokens_freed: int) -> str:
    """SGLang's warning when it retracts requests (sglang 0.5.23 ``python/sglang/srt/managers/scheduler.py``), shown
    with ``preemption_victim="sglang"``, labelled as SGLang's; SGLang's ``#new_token_ratio`` part has no pykv
    counterpart and is left out."""
    return (f"[SGLang's log line] KV cache pool is full. Retract requests. #retracted_reqs: {num_retracted}, "
            f"#new_tokens_gained: {tokens_freed}")


def pykv_preemption_note(request_id: str, mode: str, fallback: Optional[str], reason: Optional[str]) -> Optional[str]:
    """pykv's own line where it departs from vLLM: a swap that fell back, or a victim aborted."""
    if mode == "abort":
        return f"pykv: request {request_id} aborted instead of preempted: {reason or 'no room to preempt it'}"
    if fallback == "recompute":
        return f'pykv: swap of request {request_id} fell back to recompute (swap_fallback="recompute"): {reason}'
    return None


@dataclass(frozen=True)
class StatsWindow:
    """What one stats line reports: the queues and pools now, and the throughput since the last line."""

    running: int
    waiting: int
    swapped: int
    gpu_usage: float  # device pool, 0-1
    cpu_usage: float  # CPU swap pool, 0-1
    prompt_tps: float
    generation_tps: float
    preemptions: int  # in this window (V1's count)
    prefix_hit_rate: Optional[float]  # 0-1 over every lookup so far; None: prefix caching off
    device_name: str  # "GPU" or "CPU": the device pool's, as V1 names it


def stats_log_lines(fmt: str, w: StatsWindow) -> list[str]:
    """The periodic stats line(s) in a release's words: V0 (vllm/engine/metrics.py, LoggingStatLogger.log),
    V1 0.10 and 0.33 (vllm/v1/metrics/loggers.py, LoggingStatLogger.log)."""
    throughput = (f"Avg prompt throughput: {w.prompt_tps:.1f} tokens/s, "
                  f"Avg generation throughput: {w.generation_tps:.1f} tokens/s, ")
    if fmt == "v0":
        lines = [throughput + f"Running: {w.running} reqs, Swapped: {w.swapped} reqs, Pending: {w.waiting} reqs, "
                              f"GPU KV cache usage: {w.gpu_usage * 100:.1f}%, "
                              f"CPU KV cache usage: {w.cpu_usage * 100:.1f}%."]
        if w.prefix_hit_rate is not None:
            lines.append(f"Prefix cache hit rate: GPU: {w.prefix_hit_rate * 100:.2f}%, CPU: 0.00%")
        return lines
    if fmt == "v0.10":
        return ["Engine 000: " + throughput + f"Running: {w.running} reqs, Waiting: {w.waiting} reqs, "
                f"GPU KV cache usage: {w.gpu_usage * 100:.1f}%, Prefix cache hit rate: "
                f"{(w.prefix_hit_rate or 0.0) * 100:.1f}%"]
    parts = [throughput + f"Running: {w.running} reqs", f"Waiting: {w.waiting} reqs"]
    if w.preemptions > 0:
        parts.append(f"Preemptions: {w.preemptions}")
    parts.append(f"{w.device_name} KV cache usage: {w.gpu_usage * 100:.1f}%")
    if w.prefix_hit_rate is not None:
        parts.append(f"Prefix cache hit rate: {w.prefix_hit_rate * 100:.1f}%")
    return ["Engine 000: " + ", ".join(parts)]
