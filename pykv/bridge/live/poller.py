"""One poll of a live server's /metrics: a bounded GET (base/bounded_http.py: one deadline, a size cap, redirects on
the same origin only) whose ``vllm:`` series become one timed Scrape, as a pasted body's would."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from pykv.bridge.base.bounded_http import Deadline, Origin, get
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.metrics.scrapes import Scrape

MAX_BODY_BYTES = 8 * 1024 * 1024  # a vLLM /metrics body is tens of KB; a few engines and models, a few hundred
MAX_SERIES_PER_METRIC = 1000  # label sets read per vllm: name (as metrics/parser.py)
DEFAULT_TIMEOUT_S = 5.0


def metrics_url(url: str) -> str:
    """The /metrics URL of a server given as ``http://host:port`` or its /metrics URL; BridgeInputError when it is
    no http(s) URL."""
    url = url.strip()
    Origin.of(url)  # refuses what is not http(s) with a host
    head = url.split("?", 1)[0].split("#", 1)[0]
    if head.rstrip("/").count("/") == 2:  # http://host:port[/]
        return head.rstrip("/") + "/metrics"
    return url


def vllm_lines(body: str) -> list[str]:
    """The body's vllm: lines (samples and their # TYPE / # HELP), at most MAX_SERIES_PER_METRIC label sets a name."""
    kept: list[str] = []
    per_name: dict[str, int] = {}
    for line in body.splitlines():
        if "vllm:" not in line:
            continue
        if not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            per_name[name] = per_name.get(name, 0) + 1
            if per_name[name] > MAX_SERIES_PER_METRIC:
                continue
        kept.append(line.strip())
    return kept


def scrape_of(lines: list[str], seconds: float, number: int) -> Scrape:
    """One Scrape of the vllm: lines read at ``seconds``; a line prometheus_client cannot read is counted."""
    scrape = Scrape(number=number, seconds=seconds)
    try:
        samples = [s for f in text_string_to_metric_families("\n".join(lines) + "\n") for s in f.samples]
    except (ValueError, TypeError, IndexError):
        samples = []
        for line in lines:
            if line.startswith("#"):
                continue
            try:
                samples += [s for f in text_string_to_metric_families(line + "\n") for s in f.samples]
            except (ValueError, TypeError, IndexError):
                scrape.rejected += 1
    for sample in samples:
        value = sample.value
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        scrape.add(sample.name, sample.labels, float(value))
    return scrape


@dataclass
class MetricsPoller:
    """Polls one /metrics URL; each ``poll()`` is one bounded GET. ``recorded``: each poll's (time, vllm: lines)
    when ``record`` (for a fixture)."""

    url: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_bytes: int = MAX_BODY_BYTES
    record: bool = False
    polls: int = 0
    recorded: list[tuple[float, list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.url = metrics_url(self.url)
        self.origin = Origin.of(self.url)

    def poll(self) -> Scrape:
        """One scrape, stamped with this machine's clock; BridgeInputError (one line) when none came."""
        self.polls += 1
        stamp = time.time()
        status, body = get(self.url, self.origin, Deadline(self.timeout_s), self.max_bytes, self.timeout_s)
        if status != 200:
            raise BridgeInputError(f"{self.url} answered HTTP {status}, not a /metrics body")
        lines = vllm_lines(body.decode("utf-8", errors="replace"))
        if not any(not line.startswith("#") for line in lines):
            raise BridgeInputError(f"{self.url} has no vllm: series: is it a vLLM server's /metrics?")
        if self.record:
            self.recorded.append((stamp, lines))
        return scrape_of(lines, stamp, self.polls)
