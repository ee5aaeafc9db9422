"""Reads vLLM's series from a live Prometheus server (`/api/v1/query_range`), one bounded query per series.

The result is a list of Scrapes (one per step), so it goes through the same sample-building path as pasted text.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from dataclasses import dataclass

from pykv.bridge.base.bounded_http import Deadline, Origin, get_json
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.metrics.scrapes import MetricsParse, Scrape, bounded_stamp, scrapes_to_samples

# Deprecated names beside their replacements: old servers only expose the first ones.
SERIES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:num_requests_swapped",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "vllm:cpu_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_queries_total",
    "vllm:gpu_prefix_cache_hits_total",
    "vllm:gpu_prefix_cache_queries_total",
    "vllm:gpu_prefix_cache_hit_rate",
)
MAX_POINTS = 11_000  # Prometheus refuses more than 11,000 points per series
DEADLINE_S = 60.0  # every query of one reading, together
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # one series' answer: 11,000 points of a few label sets is a few MB


def series_query(name: str) -> str:
    """The PromQL for one vLLM series under either spelling: a Prometheus that scrapes OpenMetrics from a recent
    prometheus_client (vLLM's exporter) stores `vllm:x` as `vllm_x` (colons escaped to underscores)."""
    return '{__name__=~"vllm[:_]' + re.escape(name.removeprefix("vllm:")) + '"}'


def colon_name(stored: str) -> str:
    """`vllm_num_preemptions_total` (as stored) -> `vllm:num_preemptions_total` (as vLLM names it)."""
    return "vllm:" + stored[len("vllm_") :] if stored.startswith("vllm_") else stored


_DURATION = re.compile(r"(\d{1,6})([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'90s', '15m', '2h', '1d', '1h30m' -> seconds."""
    pieces = _DURATION.findall(text.strip())
    if not pieces or "".join(n + u for n, u in pieces) != text.strip():
        raise BridgeInputError(f"cannot read the duration {text!r}: write it like 90s, 15m, 2h or 1d")
    return float(sum(int(number) * _UNIT_SECONDS[unit] for number, unit in pieces))


@dataclass(frozen=True)
class _Reading:
    """What every query of one reading shares: the origin redirects must stay on, the one deadline, the size cap."""

    origin: Origin
    deadline: Deadline
    max_bytes: int
    timeout_s: float


def _query(base_url: str, series: str, start: float, end: float, step: float, reading: _Reading) -> list:
    query = urllib.parse.urlencode({"query": series, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
    url = base_url.rstrip("/") + "/api/v1/query_range?" + query
    try:
        status, body = get_json(url, reading.origin, reading.deadline, reading.max_bytes, reading.timeout_s)
    except BridgeInputError as exc:
        raise BridgeInputError(
            f"Prometheus at {base_url} did not answer a query_range for {series}: {exc}; "
            "check the URL and that the server is up"
        ) from None
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error", f"HTTP {status}") if isinstance(body, dict) else "not a JSON object"
        raise BridgeInputError(f"Prometheus at {base_url} refused the query for {series}: {str(error)[:200]}")
    data = body.get("data")
    result = data.get("result", []) if isinstance(data, dict) else []
    return result if isinstance(result, list) else []


def fetch_range(
    base_url: str,
    last: str = "2h",
    step_s: float | None = None,
    timeout_s: float = 10.0,
    now: float | None = None,
    deadline_s: float | None = None,
    max_bytes: int | None = None,
) -> MetricsParse:
    """The vLLM series over the last `last` (e.g. "2h") as a MetricsParse; raises BridgeInputError naming the URL.
    Every query shares one deadline (``deadline_s``, DEADLINE_S by default), each answer is capped at ``max_bytes``
    (MAX_ANSWER_BYTES), and a redirect is followed only on the URL's own origin."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise BridgeInputError(
            f"{str(base_url)[:200]!r} is not an http(s) URL: give the Prometheus server like http://host:9090"
        )
    deadline = Deadline(DEADLINE_S if deadline_s is None else deadline_s)
    reading = _Reading(Origin.of(base_url), deadline, max_bytes or MAX_ANSWER_BYTES, timeout_s)
    end = time.time() if now is None else now
    span = parse_duration(last)
    step = step_s if step_s else max(15.0, span / MAX_POINTS)
    start = end - span
    scrapes: dict[float, Scrape] = {}
    rejected = 0
    for series in SERIES:
        for item in _query(base_url, series_query(series), start, end, step, reading):
            labels = item.get("metric", {}) if isinstance(item, dict) else {}
            labels = labels if isinstance(labels, dict) else {}
            name = colon_name(str(labels.get("__name__", series)))
            values = item.get("values", []) if isinstance(item, dict) else []
            for point in values[:MAX_POINTS] if isinstance(values, list) else []:
                try:
                    stamp, value = float(point[0]), float(point[1])
                except (TypeError, ValueError, IndexError, KeyError, OverflowError):
                    continue
                if value != value:  # NaN: a gap in the series
                    continue
                if bounded_stamp(stamp) is None:
                    rejected += 1
                    continue
                scrape = scrapes.setdefault(stamp, Scrape(number=0, seconds=stamp))
                scrape.add(name, labels, value)
    ordered = [scrapes[stamp] for stamp in sorted(scrapes)]
    for number, scrape in enumerate(ordered, start=1):
        scrape.number = number
    if not ordered:
        raise BridgeInputError(
            f"Prometheus at {base_url} has no vllm: series over the last {last}: is it scraping "
            "the vLLM server's /metrics?"
        )
    # Prometheus answers a point for `lookback` after a sample; a first point well past the window's start means the
    # server's series began inside it (it started there), so the counters' first values happened in the window
    began_inside = ordered[0].seconds is not None and ordered[0].seconds > start + step
    result = scrapes_to_samples(ordered, counters_from_zero=began_inside)
    if rejected:
        result.notes.append(f"{rejected} point(s) stamped before 1970 or past the year 5138 were ignored")
    return result
