"""Scrapes (one reading of every vllm: series) into timeline samples: gauges as read, counters as per-interval
deltas and rates (a counter that goes down was reset by a restart: its new value is the delta).

V1 labels every series with its engine (`engine="0"`, v1/metrics/loggers.py PrometheusStatLogger, 0.8.0+; V0's
carry model_name only): a data-parallel server's scrape is read per engine and in total, requests and counters
added up, KV usage the fullest engine's (as the log's stats lines: logs/engines.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from pykv.bridge.base.numbers import (
    MAX_COUNT,
    MAX_EPOCH_S,
    MAX_GIB,
    MAX_METRIC_VALUE,
    MAX_RATE,
    bounded_float,
    bounded_int,
)
from pykv.bridge.base.records import Sample, ServerConfig, StartupFact

# Gauges summed over engines / models (counts of requests).
_SUMMED = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:num_requests_swapped": "swapped",
}
# Gauges where the fullest engine speaks for the server.
_MAXED = {
    "vllm:kv_cache_usage_perc": "gpu_kv_usage",
    "vllm:gpu_cache_usage_perc": "gpu_kv_usage_deprecated",
    "vllm:cpu_cache_usage_perc": "cpu_kv_usage",
    "vllm:gpu_prefix_cache_hit_rate": "prefix_hit_gauge",
    "vllm:avg_prompt_throughput_toks_per_s": "prompt_tps_gauge",
    "vllm:avg_generation_throughput_toks_per_s": "gen_tps_gauge",
}
# Counters (read without their _total suffix).
_COUNTERS = {
    "vllm:num_preemptions": "preemptions",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:generation_tokens": "generation_tokens",
    "vllm:prefix_cache_hits": "prefix_hits",
    "vllm:prefix_cache_queries": "prefix_queries",
    "vllm:gpu_prefix_cache_hits": "prefix_hits_deprecated",
    "vllm:gpu_prefix_cache_queries": "prefix_queries_deprecated",
    "vllm:request_num_preemptions_sum": "finished_preemptions",  # the histogram's sum: finished requests' count
}
# Counters whose last reading is a floor since start-up (what one scrape alone can tell).
_SINCE_START = ("preemptions", "finished_preemptions")
_PREEMPTION_BUCKETS = "vllm:request_num_preemptions_bucket"


@dataclass
class MetricsParse:
    samples: list[Sample]
    startup: list[StartupFact]
    config: ServerConfig
    names: set[str]  # every vllm: sample name seen (for the release guess)
    preemption_histogram: dict[float, float]  # request_num_preemptions: upper bound -> cumulative count (last scrape)
    lines_read: int
    lines_skipped: int
    notes: list[str] = field(default_factory=list)
    engine_samples: dict[int, list[Sample]] = field(default_factory=dict)  # per engine when more than one
    features: set[str] = field(default_factory=set)  # release_guess features beyond the names ("metric_label:engine")
    since_start: dict[str, float] = field(default_factory=dict)  # _SINCE_START counters as last read (a floor)


@dataclass
class Scrape:
    number: int
    seconds: float | None
    values: dict[str, float] = field(default_factory=dict)
    cache_config: dict[str, str] | None = None
    preemption_buckets: dict[float, float] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    rejected: int = 0  # negative, infinite or out-of-range readings (base/numbers.py): no vLLM series has one
    engines: dict[str, dict[str, float]] = field(default_factory=dict)  # engine label -> its own values
    engine_cache_configs: dict[str, dict[str, str]] = field(default_factory=dict)  # 0.32+ labels it per engine

    def add(self, name: str, labels: dict, value: float) -> None:
        self.names.add(name)
        if name.endswith("_created"):
            return
        if name == "vllm:cache_config_info":
            self.cache_config = dict(labels)
            if "engine" in labels:
                self.engine_cache_configs[labels["engine"]] = dict(labels)
            return
        if bounded_float(value, MAX_METRIC_VALUE) is None:
            self.rejected += 1
            return
        if name == _PREEMPTION_BUCKETS:
            bound = _float_or_none(labels.get("le"))
            if bound is not None:
                self.preemption_buckets[bound] = self.preemption_buckets.get(bound, 0.0) + value
            return
        base = name[:-6] if name.endswith("_total") else name
        engine = labels.get("engine")
        targets = [self.values] if engine is None else [self.values, self.engines.setdefault(engine, {})]
        for values in targets:
            if name in _SUMMED:
                key = _SUMMED[name]
                values[key] = values.get(key, 0.0) + value
            elif name in _MAXED:
                key = _MAXED[name]
                values[key] = max(values.get(key, value), value)
            elif base in _COUNTERS:
                key = _COUNTERS[base]
                values[key] = values.get(key, 0.0) + value
            else:
                values.setdefault("other", 0.0)


def _float_or_none(text: str | None, high: float = MAX_GIB) -> float | None:
    """A label's number, finite and bounded (a bucket's "+Inf" is its own case); None otherwise."""
    if text == "+Inf":
        return float("inf")
    return bounded_float(text, high)


def _int_or_none(text: str | None) -> int | None:
    return bounded_int(text, MAX_COUNT)


def bounded_stamp(seconds: float | None) -> float | None:
    """A scrape's time in seconds since 1970, or None when it is no clock's (1e20 ms, inf, before 1970)."""
    return bounded_float(seconds, MAX_EPOCH_S) if seconds is not None else None


def _delta(now: dict, before: dict | None, key: str) -> float | None:
    if before is None or key not in now or key not in before:
        return None
    change = now[key] - before[key]
    return now[key] if change < 0 else change  # a restart resets counters to zero


def scrapes_to_samples(scrapes: list[Scrape], counters_from_zero: bool = False) -> MetricsParse:
    """``counters_from_zero``: the server started within the scrapes' window (its series begin after the window
    does), so the first scrape's counters count from zero: what they hold happened in the window."""
    samples: list[Sample] = []
    startup: list[StartupFact] = []
    config = ServerConfig()
    names: set[str] = set()
    previous: Scrape | None = Scrape(0, None, dict.fromkeys(_COUNTERS.values(), 0.0)) if counters_from_zero else None
    rejected = 0
    last_fact: dict[str | None, StartupFact] = {}  # per engine label (None: one engine or none named)
    for scrape in scrapes:
        names |= scrape.names
        rejected += scrape.rejected
        if scrape.values:  # buckets or cache_config_info alone are facts, not a timeline point
            samples.append(_sample(scrape, previous))
        configs: dict[str | None, dict[str, str]] = {}
        configs.update(scrape.engine_cache_configs)
        if len(configs) < 2:
            configs = {None: scrape.cache_config} if scrape.cache_config is not None else {}
        for label, labels in configs.items():
            rejected += sum(
                1
                for key in ("num_gpu_blocks", "num_cpu_blocks", "block_size")
                if labels.get(key) not in (None, "", "None") and _int_or_none(labels[key]) is None
            )
            fact = _startup_from_cache_config(labels, config)
            fact.engine = bounded_int(label) if label is not None else None
            if label not in last_fact or last_fact[label].to_json_dict() != fact.to_json_dict():
                fact.lines.append(scrape.number)
                startup.append(fact)
                last_fact[label] = fact
        previous = scrape if scrape.values else previous
    buckets = next((s.preemption_buckets for s in reversed(scrapes) if s.preemption_buckets), {})
    notes = [f"{rejected} negative, infinite or out-of-range reading(s) ignored"] if rejected else []
    engine_samples = per_engine_samples(scrapes, counters_from_zero)
    if engine_samples:
        notes.append(
            f"{len(engine_samples)} engines (engine label): the timeline is their total (requests and counters "
            "added up, KV usage of the fullest engine); each engine's own is kept"
        )
    features = {"metric_label:engine"} if any(scrape.engines for scrape in scrapes) else set()
    names = {n for n in names if n.startswith("vllm:")}
    last = previous.values if previous is not None else {}
    since_start = {key: last[key] for key in _SINCE_START if key in last}
    return MetricsParse(
        samples,
        startup,
        config,
        names,
        buckets,
        0,
        0,
        notes,
        engine_samples=engine_samples,
        features=features,
        since_start=since_start,
    )


def per_engine_samples(scrapes: list[Scrape], counters_from_zero: bool = False) -> dict[int, list[Sample]]:
    """Each engine's timeline, read from its labelled series alone ({} for one engine or none)."""
    labels = sorted({engine for scrape in scrapes for engine in scrape.engines}, key=lambda e: (len(e), e))
    indexes = {label: bounded_int(label) for label in labels}
    if len(labels) < 2 or any(index is None for index in indexes.values()):
        return {}
    result: dict[int, list[Sample]] = {}
    for label in labels:
        zero = Scrape(0, None, dict.fromkeys(_COUNTERS.values(), 0.0)) if counters_from_zero else None
        previous: Scrape | None = zero
        samples = []
        for scrape in scrapes:
            values = scrape.engines.get(label)
            if not values:
                continue
            own = Scrape(scrape.number, scrape.seconds, values)
            sample = _sample(own, previous)
            sample.engine = indexes[label]
            samples.append(sample)
            previous = own
        result[indexes[label]] = samples  # type: ignore[index]
    return result


def _sample(scrape: Scrape, previous: Scrape | None) -> Sample:
    values = scrape.values
    before = previous.values if previous is not None else None
    dt = None
    if previous is not None and scrape.seconds is not None and previous.seconds is not None:
        dt = scrape.seconds - previous.seconds if scrape.seconds > previous.seconds else None
    time = (
        datetime.fromtimestamp(scrape.seconds, tz=timezone.utc).isoformat().replace("+00:00", "Z")
        if scrape.seconds is not None
        else None
    )
    sample = Sample(time=time, seconds=scrape.seconds, line=scrape.number)
    for key in ("running", "waiting", "swapped"):
        if key in values:
            setattr(sample, key, bounded_int(int(values[key])))
    usage = values.get("gpu_kv_usage", values.get("gpu_kv_usage_deprecated"))
    sample.gpu_kv_usage = round(min(usage, 1.0), 6) if usage is not None else None
    if "cpu_kv_usage" in values:
        sample.cpu_kv_usage = round(min(values["cpu_kv_usage"], 1.0), 6)
    preempted = _delta(values, before, "preemptions")
    sample.preemptions = bounded_int(int(preempted)) if preempted is not None else None
    for counter, gauge, target in (
        ("prompt_tokens", "prompt_tps_gauge", "prompt_tps"),
        ("generation_tokens", "gen_tps_gauge", "gen_tps"),
    ):
        change = _delta(values, before, counter)
        rate = bounded_float(change / dt, MAX_RATE) if change is not None and dt else None
        if rate is not None:
            setattr(sample, target, round(rate, 3))
        elif gauge in values:
            setattr(sample, target, bounded_float(values[gauge], MAX_RATE))
    hits = _delta(values, before, "prefix_hits" if "prefix_hits" in values else "prefix_hits_deprecated")
    queries = _delta(values, before, "prefix_queries" if "prefix_queries" in values else "prefix_queries_deprecated")
    if hits is not None and queries:
        sample.prefix_hit_rate = round(min(hits / queries, 1.0), 6)
    elif "prefix_hit_gauge" in values:
        sample.prefix_hit_rate = round(min(values["prefix_hit_gauge"], 1.0), 6)
    return sample


def _startup_from_cache_config(labels: dict[str, str], config: ServerConfig) -> StartupFact:
    fact = StartupFact(
        num_gpu_blocks=_int_or_none(labels.get("num_gpu_blocks")),
        num_cpu_blocks=_int_or_none(labels.get("num_cpu_blocks")),
        block_size=_int_or_none(labels.get("block_size")),
        # 0.32.0 adds the start-up log's figures as labels (kv_cache_size_tokens, kv_cache_max_concurrency, ...)
        kv_cache_tokens=_int_or_none(labels.get("kv_cache_size_tokens")),
        max_concurrency=_float_or_none(labels.get("kv_cache_max_concurrency"), MAX_COUNT),
    )
    memory = _float_or_none(labels.get("kv_cache_memory_bytes"), MAX_GIB * 1024**3)
    fact.kv_memory_gib = round(memory / 1024**3, 3) if memory is not None else None
    if fact.kv_cache_tokens is None and fact.num_gpu_blocks is not None and fact.block_size is not None:
        fact.kv_cache_tokens = fact.num_gpu_blocks * fact.block_size
    prefix = labels.get("enable_prefix_caching")
    if prefix in ("True", "False"):
        config.enable_prefix_caching = prefix == "True"
    utilization = _float_or_none(labels.get("gpu_memory_utilization"))
    if utilization is not None:
        config.gpu_memory_utilization = utilization
    swap_bytes = _float_or_none(labels.get("swap_space_bytes"), MAX_GIB * 1024**3)
    swap_gib = _float_or_none(labels.get("swap_space"))
    if swap_bytes is not None:
        config.swap_space_gib = swap_bytes / 1024**3
    elif swap_gib is not None:
        config.swap_space_gib = swap_gib
    config.block_size = fact.block_size or config.block_size
    return fact
