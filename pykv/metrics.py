"""Engine metrics under vLLM's names (plus pykv's own), in a Prometheus registry per engine, and
the vLLM-style log lines."""

from __future__ import annotations

import logging
from typing import Optional

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

prometheus_client.disable_created_metrics()  # as vLLM does: no *_created series
logger = logging.getLogger("pykv")


class EngineMetrics:
    """Counters and gauges updated once per step. Counter names get Prometheus' ``_total`` suffix in
    the exposition (``vllm:num_preemptions_total``), exactly as vLLM's do."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.running = Gauge("vllm:num_requests_running", "Requests in the RUNNING queue.", registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests in the WAITING queue.", registry=r)
        self.swapped = Gauge("vllm:num_requests_swapped", "Requests in the SWAPPED queue.", registry=r)
        self.kv_usage = Gauge("vllm:kv_cache_usage_perc", "Device KV pool usage, 0-1.", registry=r)
        self.cpu_usage = Gauge("vllm:cpu_cache_usage_perc", "CPU swap pool usage, 0-1.", registry=r)
        self.preemptions = Counter("vllm:num_preemptions", "Preemptions of any mode.", registry=r)
        self.prefix_queries = Counter("vllm:prefix_cache_queries", "Prefix-cache lookups, in tokens.", registry=r)
        self.prefix_hits = Counter("vllm:prefix_cache_hits", "Prefix-cache hits, in tokens.", registry=r)
        self.prefix_hits_own = Counter(
            "pykv:prefix_cache_hits_own", "Hits on blocks the same request computed before its preemption (tokens).",
            registry=r)
        self.prefix_hits_shared = Counter(
            "pykv:prefix_cache_hits_shared", "Hits on blocks another request computed (tokens).", registry=r)
        self.recomputed_tokens = Counter(
            "pykv:recomputed_tokens", "Tokens re-prefilled after recompute preemptions.", registry=r)
        self.recompute_seconds = Counter(
            "pykv:recompute_seconds", "Forward time apportioned to re-prefilled tokens.", registry=r)
        self.swap_out_bytes = Counter("pykv:swapped_out_bytes", "KV bytes copied device -> CPU.", registry=r)
        self.swap_in_bytes = Counter("pykv:swapped_in_bytes", "KV bytes copied CPU -> device.", registry=r)
        self.swap_out_seconds = Counter("pykv:swap_out_seconds", "Measured swap-out copy time.", registry=r)
        self.swap_in_seconds = Counter("pykv:swap_in_seconds", "Measured swap-in copy time.", registry=r)
        self.request_preemptions = Histogram(
            "pykv:request_preemptions", "Preemptions per finished request.", buckets=(0, 1, 2, 4, 8, 16, 32),
            registry=r)
        self.prompt_tokens = Counter(
            "vllm:prompt_tokens", "Prefill tokens computed (re-prefills included).", registry=r)
        self.generation_tokens = Counter("vllm:generation_tokens", "Output tokens generated.", registry=r)

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


def preemption_log_line(request_id: str, mode: str, fallback: Optional[str], reason: Optional[str], total: int) -> str:
    """vLLM V0's preemption warning, with pykv's note on a fallback or abort."""
    if mode == "abort":
        return (f"Sequence group {request_id} is aborted: {reason or 'no room to preempt it'}. "
                f"total_num_cumulative_preemption={total}")
    mode_name = "PreemptionMode.SWAP" if mode == "swap" else "PreemptionMode.RECOMPUTE"
    line = (
        f"Sequence group {request_id} is preempted by {mode_name} mode because there is not enough KV cache "
        "space. This can affect the end-to-end performance. Increase gpu_memory_utilization or "
        f"tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption={total}"
    )
    if fallback == "recompute":
        line += f' (swap_fallback="recompute": {reason})'
    return line


def stats_log_line(running: int, swapped: int, waiting: int, gpu_usage: float, cpu_usage: float,
                   prompt_tps: float, generation_tps: float) -> str:
    """vLLM V0's periodic stats line."""
    return (
        f"Avg prompt throughput: {prompt_tps:.1f} tokens/s, Avg generation throughput: {generation_tps:.1f} tokens/s, "
        f"Running: {running} reqs, Swapped: {swapped} reqs, Pending: {waiting} reqs, "
        f"GPU KV cache usage: {gpu_usage * 100:.1f}%, CPU KV cache usage: {cpu_usage * 100:.1f}%."
    )
