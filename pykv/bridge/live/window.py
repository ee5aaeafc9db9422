"""The window an attach holds: the scrapes polled, the log lines followed and the KV events counted since it began,
each bounded, and the diagnosis of what it holds (``pykv.bridge.diagnose`` on the window's data, as a pasted log
and /metrics bodies would be read).

Bounds: the last MAX_SCRAPES scrapes (an hour at one a second); the log's first HEAD_LINES lines (its start-up:
blocks, block size, config) and its last TAIL_LINES lines (the recent stats lines). Counters are read as deltas
from the window's first scrape: what happened while attached; the first scrape's own reading is kept as
``counter_at_start`` (a floor since the server started).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.base.records import Sample
from pykv.bridge.diagnose import diagnose
from pykv.bridge.diagnosis import Diagnosis
from pykv.bridge.metrics.scrapes import MetricsParse, Scrape, scrapes_to_samples

MAX_SCRAPES = 3600
HEAD_LINES = 2000
TAIL_LINES = 50_000


@dataclass
class LiveWindow:
    scrapes: deque[Scrape] = field(default_factory=lambda: deque(maxlen=MAX_SCRAPES))
    log_head: list[str] = field(default_factory=list)
    log_tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    log_lines: int = 0  # every line followed, kept or not

    def add_scrape(self, scrape: Scrape) -> None:
        self.scrapes.append(scrape)

    def add_log_lines(self, lines: list[str]) -> None:
        for line in lines:
            self.log_lines += 1
            if len(self.log_head) < HEAD_LINES:
                self.log_head.append(line)
            else:
                self.log_tail.append(line)

    def metrics(self) -> MetricsParse | None:
        timed = [s for s in self.scrapes if s.values]
        return scrapes_to_samples(timed) if timed else None

    def log_text(self) -> str:
        return "\n".join(self.log_head + list(self.log_tail)) + "\n" if self.log_lines else ""

    def preemption_counter(self) -> tuple[int | None, int | None]:
        """(preemptions while attached, the counter's reading now: a floor since start-up); None: not exposed."""
        readings = [s.values["preemptions"] for s in self.scrapes if "preemptions" in s.values]
        if not readings:
            return None, None
        rise = 0.0
        for before, now in zip(readings, readings[1:]):
            rise += now if now < before else now - before  # a restart resets the counter
        return int(rise), int(readings[-1])

    def last_sample(self) -> Sample | None:
        metrics = self.metrics()
        return metrics.samples[-1] if metrics and metrics.samples else None

    def diagnosis(self) -> Diagnosis:
        """The window diagnosed; BridgeInputError (one line) when it holds nothing readable yet."""
        sources: list = [self.log_text().encode()] if self.log_lines else []
        metrics = self.metrics()
        if not sources and metrics is None:
            raise BridgeInputError("nothing read yet: no scrape and no log line")
        return diagnose(sources, live_metrics=metrics)


def timeline_row(sample: Sample | None, rise: int | None, counter: int | None, clock: str) -> str:
    """One line of the live timeline: '01:46:10  running 16  waiting 8  KV 100.0%  gen 812.0 tok/s  preemptions
    +12 (counter 40)'."""
    if sample is None:
        return f"{clock}  (no scrape yet)"
    parts = [clock]
    for label, value in (("running", sample.running), ("waiting", sample.waiting)):
        if value is not None:
            parts.append(f"{label} {value}")
    if sample.gpu_kv_usage is not None:
        parts.append(f"KV {sample.gpu_kv_usage:.1%}")
    if sample.gen_tps is not None:
        parts.append(f"gen {sample.gen_tps:.1f} tok/s")
    if rise is not None:
        parts.append(f"preemptions +{sample.preemptions or 0} (window {rise:,}, counter {counter:,})")
    else:
        parts.append("preemptions: no vllm:num_preemptions_total")
    return "  ".join(parts)
