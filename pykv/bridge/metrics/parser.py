"""Prometheus text exposition (a /metrics body; one scrape or several) into timeline samples and start-up facts.

Only `vllm:` lines reach prometheus_client's parser, and at most MAX_SERIES_PER_METRIC label sets per name, so a
body with a million label sets stays cheap. Scrapes are told apart by sample timestamps, or, without them, by a
series (or a `# TYPE`) repeating. Deprecated names sit beside their replacements; the replacement wins.
"""

from __future__ import annotations

import math
import re

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from pykv.bridge.base.bounded_reader import TextSource
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.metrics.scrapes import MetricsParse, Scrape, bounded_stamp, scrapes_to_samples

__all__ = ["MetricsParse", "parse_metrics"]

MAX_SERIES_PER_METRIC = 1000
MAX_SCRAPE_LINES = 200_000
_LABEL = re.compile(r'(\w{1,100})="([^"]{0,200})"')


def _clean(line: str) -> str:
    """Undoes what a markdown paste does to a body: quote marks, escaped underscores, code fences."""
    line = line.strip()
    if line.startswith(">"):
        line = line.lstrip("> ")
    if "\\_" in line:
        line = line.replace("\\_", "_")
    return line


class _ScrapeSplitter:
    def __init__(self) -> None:
        self.chunks: list[list[str]] = [[]]
        self._seen_series: set[str] = set()
        self._seen_types: set[str] = set()
        self._series_per_name: dict[str, int] = {}
        self.dropped_series = 0

    def add(self, line: str) -> None:
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("TYPE", "HELP") and parts[2].startswith("vllm:"):
                key = parts[1] + parts[2]
                if key in self._seen_types:
                    self._new_chunk()
                self._seen_types.add(key)
                self.chunks[-1].append(line)
            return
        series = line.rsplit(None, 1)[0] if "}" not in line else line[: line.rfind("}") + 1]
        has_timestamp = len(line[len(series) :].split()) > 1
        if series in self._seen_series and not has_timestamp:
            self._new_chunk()
        name = series.split("{", 1)[0]
        if series not in self._seen_series:
            count = self._series_per_name.get(name, 0)
            if count >= MAX_SERIES_PER_METRIC:
                self.dropped_series += 1
                return
            self._series_per_name[name] = count + 1
            self._seen_series.add(series)
        if len(self.chunks[-1]) < MAX_SCRAPE_LINES:
            self.chunks[-1].append(line)

    def _new_chunk(self) -> None:
        self.chunks.append([])
        self._seen_series = set()
        self._seen_types = set()


def _parse_chunk(lines: list[str]) -> tuple[list, int]:
    """(samples, bad lines): the whole chunk at once, or line by line when one line spoils it."""
    try:
        return [s for family in text_string_to_metric_families("\n".join(lines) + "\n") for s in family.samples], 0
    except (ValueError, TypeError, IndexError):
        pass
    samples: list = []
    bad = 0
    for line in lines:
        if line.startswith("#"):
            continue
        try:
            samples.extend(s for family in text_string_to_metric_families(line + "\n") for s in family.samples)
        except (ValueError, TypeError, IndexError):
            info = loose_cache_config(line)
            if info is None:
                bad += 1
            else:
                samples.append(info)
    return samples, bad


def loose_cache_config(line: str) -> Sample | None:
    """`vllm:cache_config_info{...}` whose labels a paste elided ("...", "…") or cut: the labels still readable."""
    if not line.startswith("vllm:cache_config_info{"):
        return None
    labels = dict(_LABEL.findall(line[: line.rfind("}") + 1] if "}" in line else line))
    return Sample("vllm:cache_config_info", labels, 1.0, None, None) if labels else None


def parse_metrics(sources: list[TextSource]) -> MetricsParse:
    lines_read = lines_skipped = dropped = untimely = 0
    scrapes: list[Scrape] = []
    for source in sources:
        splitter = _ScrapeSplitter()
        for _, raw in source.lines():
            lines_read += 1
            line = _clean(raw)
            if not line or line.startswith("```"):
                continue
            if "vllm:" not in line:
                lines_skipped += 0 if line.startswith("#") or _is_other_metric(line) else 1
                continue
            splitter.add(line)
        dropped += splitter.dropped_series
        for chunk in splitter.chunks:
            if not chunk:
                continue
            samples, bad = _parse_chunk(chunk)
            lines_skipped += bad
            timed = [s for s in samples if s.timestamp is None or bounded_stamp(float(s.timestamp)) is not None]
            untimely += len(samples) - len(timed)
            scrapes.extend(group_by_timestamp(timed, len(scrapes)))
    scrapes = [scrape for scrape in scrapes if scrape.values or scrape.preemption_buckets or scrape.cache_config]
    if not any(scrape.values for scrape in scrapes):
        if untimely:
            raise BridgeInputError(
                f"no vllm: sample in the metrics text has a usable time: {untimely} stamped before 1970 or past "
                "the year 5138 (a /metrics body's timestamps are milliseconds since 1970)"
            )
        raise BridgeInputError(
            "no vllm: samples in the metrics text: start vLLM without --disable-log-stats and "
            "paste the raw body of its /metrics page"
        )
    result = scrapes_to_samples(scrapes)
    result.lines_read, result.lines_skipped = lines_read, lines_skipped
    if dropped:
        result.notes.append(f"{dropped} label set(s) beyond {MAX_SERIES_PER_METRIC} per metric were ignored")
    if untimely:
        result.notes.append(f"{untimely} reading(s) stamped before 1970 or past the year 5138 were ignored")
    return result


def _is_other_metric(line: str) -> bool:
    """Another exporter's sample (python_gc_*, process_*): expected in a /metrics body, not an unknown line."""
    head = line.split("{", 1)[0].split(" ", 1)[0]
    return bool(head) and (head[0].isalpha() or head[0] == "_") and all(c.isalnum() or c in "_:" for c in head)


def group_by_timestamp(samples: list, index: int) -> list[Scrape]:
    """One Scrape per distinct sample timestamp (none: the whole chunk is one scrape); the caller drops samples
    stamped out of range (``bounded_stamp``)."""
    groups: dict[float | None, Scrape] = {}
    stamps = [float(s.timestamp) for s in samples if s.timestamp is not None]
    fallback = stamps[-1] if stamps else None  # an untimed line (cache_config_info) joins the chunk's timed scrape
    for sample in samples:
        value = sample.value
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        stamp = float(sample.timestamp) if sample.timestamp is not None else fallback
        scrape = groups.get(stamp)
        if scrape is None:
            scrape = groups[stamp] = Scrape(number=index + len(groups) + 1, seconds=stamp)
        scrape.add(sample.name, sample.labels, float(value))
    return sorted(groups.values(), key=lambda s: (s.seconds is None, s.seconds or 0.0))
