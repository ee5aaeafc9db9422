"""`diagnose(sources)`: sniffs each source (log, metrics, trace), parses it, and draws the findings."""

from __future__ import annotations

import os
from typing import BinaryIO

from pykv.bridge.base.bounded_reader import MAX_DECOMPRESSED_BYTES, ReadBudget, TextSource
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.base.records import ServerConfig
from pykv.bridge.base.release_guess import guess_release
from pykv.bridge.diagnosis import Diagnosis, visibility_notes
from pykv.bridge.findings.count import countable, preemption_text, state
from pykv.bridge.findings.evidence import Evidence
from pykv.bridge.findings.rules import find_all
from pykv.bridge.logs.parser import PREEMPTIONS_FIELD, LogParse, parse_log
from pykv.bridge.metrics.parser import MetricsParse, parse_metrics
from pykv.bridge.traces.reader import TraceParse, read_trace, sniff_trace_format

Source = str | os.PathLike | bytes | BinaryIO  # a path, pasted text or bytes, an uploaded file (read, not copied)


def sniff(head: str) -> str:
    """'log', 'metrics' or 'trace' from the first 64 KB."""
    if sniff_trace_format(head):
        return "trace"
    metric_lines = head.count("\nvllm:") + head.startswith("vllm:") + head.count("# TYPE vllm:")
    if metric_lines and "throughput:" not in head:
        return "metrics"
    return "log"


def shared_prefix_count(trace: TraceParse) -> int | None:
    """Requests whose first block id another request also has (None: the trace has no block ids)."""
    firsts = [r.prefix_block_ids[0] for r in trace.requests if r.prefix_block_ids]
    if not firsts:
        return None
    counts: dict[int, int] = {}
    for block in firsts:
        counts[block] = counts.get(block, 0) + 1
    return sum(n for n in counts.values() if n > 1)


def diagnose(
    sources: list[Source] | Source,
    max_decompressed: int = MAX_DECOMPRESSED_BYTES,
    live_metrics: MetricsParse | None = None,
    budget: ReadBudget | None = None,
) -> Diagnosis:
    """Read every source (a path, pasted text or bytes, a file object) and draw the findings. ``live_metrics`` (a
    Prometheus server's series, ``fetch_range``) stands in for metrics files when given. ``budget``: the lines, CPU
    time and cancel check every source shares (default: the line limit only); a read it stopped is a note."""
    if isinstance(sources, (str, bytes, os.PathLike)) or hasattr(sources, "readinto"):
        sources = [sources]  # type: ignore[list-item]
    budget = budget or ReadBudget()
    logs: list[LogParse] = []
    metric_sources: list[TextSource] = []
    traces: list[TraceParse] = []
    read: list[TextSource] = []
    log_sources: list[TextSource] = []
    for source in sources:
        text = TextSource(source, max_decompressed=max_decompressed, budget=budget)
        read.append(text)
        kind = sniff(text.head)
        if kind == "trace":
            traces.append(read_trace(text))
        elif kind == "metrics":
            metric_sources.append(text)
        else:
            log_sources.append(text)
            logs.append(parse_log(text))
    metrics: MetricsParse | None = live_metrics or (parse_metrics(metric_sources) if metric_sources else None)
    stops = [f"{text.label}: {text.stats.stop_reason}" for text in read if text.stats.stop_reason]
    stops += [  # a log says so itself (parse_log)
        f"{text.label}: stopped after {text.max_decompressed:,} bytes (the bound on decompressed input)"
        for text in read
        if text.stats.stopped_at_bound and not text.stats.stop_reason and text not in log_sources
    ]
    try:
        diagnosis = combine(logs, metrics, traces)
    except BridgeInputError as e:
        if stops:
            raise BridgeInputError(f"{e} ({stops[0]})") from None
        raise
    diagnosis.notes += stops
    return diagnosis


def combine(logs: list[LogParse], metrics: MetricsParse | None, traces: list[TraceParse]) -> Diagnosis:
    samples = [s for log in logs for s in log.samples]
    startup = [f for log in logs for f in log.startup]
    warnings = [w for log in logs for w in log.warnings]
    features = set().union(*(log.features for log in logs)) if logs else set()
    config = logs[0].config if logs else (metrics.config if metrics else None)
    printed = next((log.config.version for log in logs if log.config.version), None)
    engine_hint = next((log.engine_kind for log in logs if log.engine_kind), None)
    notes = [n for log in logs for n in log.notes]
    lines_read = sum(log.lines_read for log in logs)
    lines_skipped = sum(log.lines_skipped for log in logs)
    unit = "line"
    histogram: dict[float, float] = {}
    engine_samples = next((log.engine_samples for log in logs if log.engine_samples), {})
    if metrics is not None:
        features |= {"metric:" + name for name in metrics.names} | metrics.features
        if not samples:
            samples, unit = metrics.samples, "scrape"
            engine_samples = metrics.engine_samples
        startup += [f for f in metrics.startup if not startup]
        histogram = metrics.preemption_histogram
        notes += metrics.notes
        lines_read += metrics.lines_read
        lines_skipped += metrics.lines_skipped
        if config is not None and metrics.config.enable_prefix_caching is not None:
            config.enable_prefix_caching = metrics.config.enable_prefix_caching
        config = config or metrics.config
    if not samples and not startup and not warnings and not traces:
        raise BridgeInputError(
            "found no vLLM stats line, start-up line, preemption warning, metric or trace: give "
            "the server's log (stdout), its /metrics body, or a request trace"
        )
    config = config or ServerConfig()  # a trace alone brings no config
    release = guess_release(features, printed, engine_hint)
    if release.engine == "v1":
        device_kv_from_cpu(samples)
    counted = max((log.cumulative_preemptions for log in logs), default=0)
    if metrics is not None and unit == "line":  # the log made the timeline: keep the metrics' preemption count
        counted = max(counted, sum(s.preemptions or 0 for s in metrics.samples))
    evidence = Evidence(release, samples, startup, config, warnings, counted, histogram, sample_unit=unit)
    evidence.engine_samples = engine_samples
    names = metrics.names if metrics is not None else None
    counted_now, visible = countable(release, PREEMPTIONS_FIELD in features, names)
    evidence.preemptions_counted, evidence.preemptions_visible = counted_now, visible
    if metrics is not None:
        evidence.metric_readings = len(metrics.samples)
        since = metrics.since_start
        evidence.since_start = int(since["preemptions"]) if "preemptions" in since else None
        finished = since.get("finished_preemptions")
        evidence.finished_since_start = int(finished) if finished is not None else None
    for trace in traces:
        notes += trace.notes + [f"trace {trace.format}: {trace.bad_row_count} bad row(s)"] * bool(trace.bad_row_count)
        shared = shared_prefix_count(trace)
        if shared is not None:
            evidence.shared_prefix_requests = (evidence.shared_prefix_requests or 0) + shared
            evidence.trace_requests = (evidence.trace_requests or 0) + len(trace.requests)
    findings = find_all(evidence) if samples or startup or warnings else []
    log_counts = any(log.cumulative_preemptions for log in logs) or PREEMPTIONS_FIELD in features
    read_once = metrics is not None and len(metrics.samples) < 2 and "vllm:num_preemptions_total" in metrics.names
    diagnosis = Diagnosis(
        release,
        startup,
        samples,
        evidence.preemptions_at_least(),
        findings,
        config,
        lines_read,
        lines_skipped,
        visibility_notes(release),
        notes,
        traces,
        preemptions_counted=evidence.preemptions_counted,
        preemptions_since_start=read_once and not log_counts,
        engine_samples=engine_samples,
    )
    return counted_as(diagnosis, evidence)


def counted_as(diagnosis: Diagnosis, evidence: Evidence) -> Diagnosis:
    """The preemption count's state, its one line, the window's count and the floor since start-up."""
    diagnosis.preemptions_floor_since_start = evidence.since_start_floor()
    diagnosis.preemptions_in_window = evidence.window_preemptions()
    diagnosis.preemption_state = state(evidence)
    diagnosis.preemption_text = preemption_text(evidence)
    return diagnosis


def device_kv_from_cpu(samples: list) -> None:
    """V1 has no CPU swap tier: its stats line's "CPU KV cache usage" (0.30.0+ names the device, v1/metrics/
    loggers.py; the CPU backend prints "CPU") is the device's KV cache, the one the findings read as full or not."""
    for sample in samples:
        if sample.gpu_kv_usage is None and sample.cpu_kv_usage is not None:
            sample.gpu_kv_usage, sample.cpu_kv_usage = sample.cpu_kv_usage, None
