"""Reads vLLM's series from a live Prometheus server (`/api/v1/query_range`), one bounded query per series.

The result is a list of Scrapes (one per step), so it goes through the same sample-building path as pasted text.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request

from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.metrics.scrapes import MetricsParse, Scrape, scrapes_to_samples

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


def _query(base_url: str, series: str, start: float, end: float, step: float, timeout_s: float) -> list:
    query = urllib.parse.urlencode({"query": series, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
    url = base_url.rstrip("/") + "/api/v1/query_range?" + query
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = json.loads(response.read(64 * 1024 * 1024))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BridgeInputError(
            f"Prometheus at {base_url} did not answer a query_range for {series}: {reason}; "
            "check the URL and that the server is up"
        ) from None
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error", "no status") if isinstance(body, dict) else "not a JSON object"
        raise BridgeInputError(f"Prometheus at {base_url} refused the query for {series}: {error}")
    result = body.get("data", {}).get("result", [])
    return result if isinstance(result, list) else []


def fetch_range(
    base_url: str, last: str = "2h", step_s: float | None = None, timeout_s: float = 10.0, now: float | None = None
) -> MetricsParse:
    """The vLLM series over the last `last` (e.g. "2h") as a MetricsParse; raises BridgeInputError naming the URL."""
    if not base_url.startswith(("http://", "https://")):
        raise BridgeInputError(f"{base_url!r} is not an http(s) URL: give the Prometheus server like http://host:9090")
    end = time.time() if now is None else now
    span = parse_duration(last)
    step = step_s if step_s else max(15.0, span / MAX_POINTS)
    start = end - span
    scrapes: dict[float, Scrape] = {}
    for series in SERIES:
        for item in _query(base_url, series_query(series), start, end, step, timeout_s):
            labels = item.get("metric", {}) if isinstance(item, dict) else {}
            name = colon_name(labels.get("__name__", series))
            for point in (item.get("values", []) if isinstance(item, dict) else [])[:MAX_POINTS]:
                try:
                    stamp, value = float(point[0]), float(point[1])
                except (TypeError, ValueError, IndexError):
                    continue
                if value != value:  # NaN: a gap in the series
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
    return scrapes_to_samples(ordered, counters_from_zero=began_inside)
