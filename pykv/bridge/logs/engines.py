"""Data-parallel servers: one stats line per engine per interval, kept per engine and added up into one total.

vLLM V1 prints a stats line per engine core, each prefixed `Engine 000: `, `Engine 001: ` (v1/metrics/loggers.py
LoggingStatLogger.log, 0.8.3+): the front end logs every engine's line in one pass (0.10.2 StatLoggerManager.log,
loggers.py:707, called by v1/engine/async_llm.py:621 each interval), so the lines of one interval come together, in
the same second or the next. An engine that produced no token in two intervals prints its line at DEBUG level (read
in 0.9.2 to 0.33.0), so not at all on a default server: a round may lack an engine, and the total is over the
engines that printed. A caveat for rules reading the total: its KV usage is the fullest engine's and its queue is
everyone's, so a queue on one engine beside another, full engine looks saturated; the per-engine timelines tell.

    Engine 000: ... Running: 40 reqs, Waiting: 12 reqs, GPU KV cache usage: 99.1%   \\
    Engine 001: ... Running: 38 reqs, Waiting: 9 reqs, GPU KV cache usage: 97.0%    /  one round -> one total:
                                                     running 78, waiting 21, KV 99.1% (the fullest engine's)

A round closes when an engine repeats or a line comes more than ROUND_SECONDS after the round's first. The total
adds up what adds up (requests, throughputs, preemptions) and takes the fullest engine's KV usage (a request
waits on the engine it was sent to: a full engine with a queue is saturated whatever the others hold) and the mean
of the prefix hit rates (the line prints no query counts to weight them by). A log with one engine keeps one
sample per line, as before: the total of a one-engine round is that engine's line.
"""

from __future__ import annotations

from dataclasses import replace

from pykv.bridge.base.records import Sample
from pykv.bridge.logs.timeline import BoundedTimeline

ROUND_SECONDS = 2.0
_SUMMED = ("running", "waiting", "swapped", "prompt_tps", "gen_tps", "preemptions")
_FULLEST = ("gpu_kv_usage", "cpu_kv_usage")


class EngineRounds:
    """Per-engine timelines and the total timeline of a log whose stats lines name their engine."""

    def __init__(self, total: BoundedTimeline, max_samples: int | None = None) -> None:
        self.total = total  # the caller's timeline: one total sample per round
        self.per_engine: dict[int, BoundedTimeline] = {}
        self._max_samples = max_samples
        self._round: dict[int, Sample] = {}  # engine -> its line of the open round

    def add(self, sample: Sample) -> None:
        engine = sample.engine
        assert engine is not None, "only lines that name their engine come here"
        if self._round and (engine in self._round or _too_late(self._round, sample)):
            self.close()
        self._round[engine] = sample
        if engine not in self.per_engine:
            if len(self.per_engine) == 1:  # a second engine: the first one's timeline so far is the total's
                (first,) = self.per_engine
                so_far = self.total.samples + ([self._round[first]] if first in self._round else [])
                self.per_engine[first] = self._new_timeline(replace(s) for s in so_far)
            self.per_engine[engine] = self._new_timeline(())
        if len(self.per_engine) > 1:
            self.per_engine[engine].add(replace(sample))  # a copy: the total's merges must not change it

    def _new_timeline(self, samples) -> BoundedTimeline:
        timeline = BoundedTimeline(self._max_samples) if self._max_samples else BoundedTimeline()
        for sample in samples:
            timeline.add(sample)
        return timeline

    def close(self) -> Sample | None:
        """Adds the open round's total to the timeline (and returns it)."""
        if not self._round:
            return None
        values = list(self._round.values())
        # One engine so far: its own sample is the total (no copy: its timeline is the total's).
        total = values[0] if len(values) == 1 and len(self.per_engine) < 2 else total_of(values)
        self._round = {}
        self.total.add(total)
        return total

    def finish(self) -> dict[int, list[Sample]]:
        """Closes the last round; each engine's samples when the log had more than one engine, else {}."""
        self.close()
        if len(self.per_engine) < 2:
            return {}
        return {engine: self.per_engine[engine].finish() for engine in sorted(self.per_engine)}


def _too_late(round_: dict[int, Sample], sample: Sample) -> bool:
    first = next(iter(round_.values()))
    if first.seconds is None or sample.seconds is None:
        return False
    return abs(sample.seconds - first.seconds) > ROUND_SECONDS


def total_of(samples: list[Sample]) -> Sample:
    """One sample for the whole server from its engines' samples of one interval (the first one's time)."""
    if len(samples) == 1:
        return replace(samples[0])
    first = samples[0]
    total = Sample(time=first.time, seconds=first.seconds, line=first.line, engine=None)
    for name in _SUMMED:
        values = [getattr(s, name) for s in samples if getattr(s, name) is not None]
        if values:
            setattr(total, name, round(sum(values), 3) if isinstance(values[0], float) else sum(values))
    for name in _FULLEST:
        values = [getattr(s, name) for s in samples if getattr(s, name) is not None]
        if values:
            setattr(total, name, max(values))
    rates = [s.prefix_hit_rate for s in samples if s.prefix_hit_rate is not None]
    if rates:
        total.prefix_hit_rate = round(sum(rates) / len(rates), 6)
    return total


def engine_lines(engine_samples: dict[int, list[Sample]]) -> list[str]:
    """What each engine of a data-parallel server went through, one line each (for the CLI and the page)."""
    if not engine_samples:
        return []
    lines = [f"per engine ({len(engine_samples)} engines; the timeline above is their total):"]
    for engine, samples in engine_samples.items():
        usage = [s.gpu_kv_usage for s in samples if s.gpu_kv_usage is not None]
        running = max((s.running or 0 for s in samples), default=0)
        waiting = max((s.waiting or 0 for s in samples), default=0)
        lines.append(
            f"  engine {engine}: {len(samples)} samples, running up to {running}, waiting up to {waiting}"
            + (f", KV usage up to {max(usage):.1%}" if usage else "")
        )
    return lines


def pool_label(device: str | None) -> str:
    """How to name a start-up's device pool: "GPU blocks", or the CPU backend's (its "GPU" blocks live in RAM)."""
    if device is not None and device.upper() == "CPU":
        return "KV blocks (CPU backend)"
    return "GPU blocks"
