"""Everything the finding rules look at, gathered from logs, metrics and traces."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykv.bridge.base.records import PreemptionWarning, Sample, ServerConfig, StartupFact
from pykv.bridge.base.release_guess import ReleaseGuess

KV_FULL = 0.95  # "near 100%": vLLM preempts before the last block, so 95% already is full
KV_FAR_FROM_FULL = 0.70


@dataclass
class Evidence:
    release: ReleaseGuess
    samples: list[Sample]
    startup: list[StartupFact]
    config: ServerConfig
    warnings: list[PreemptionWarning] = field(default_factory=list)
    cumulative_preemptions: int = 0
    preemption_histogram: dict[float, float] = field(default_factory=dict)
    shared_prefix_requests: int | None = None  # from a trace: requests that share a first block with another
    trace_requests: int | None = None
    # False: nothing read can count preemptions (a V1 log alone: its stats line prints no count, and no
    # vllm:num_preemptions_total was given), so a zero means "not counted", not "none"
    preemptions_counted: bool = True
    # False: the release cannot show preemptions at all (before 0.4.3: no warning, no counter); implies not counted
    preemptions_visible: bool = True
    # the last reading of vllm:num_preemptions_total (and of the vllm:request_num_preemptions histogram's sum): a
    # floor since the server started, whatever the window read (None: not read)
    since_start: int | None = None
    finished_since_start: int | None = None
    metric_readings: int = 0  # /metrics scrapes read: from two on, the counter's rise is the window's count
    # A data-parallel server's timeline per engine (``samples`` is then their total): each engine has its own batch,
    # queue and KV cache, and --max-num-seqs is per engine
    engine_samples: dict[int, list[Sample]] = field(default_factory=dict)

    def window_preemptions(self) -> int:
        """Preemptions counted in what was read: per interval, V0's cumulative warning count, the counter's rise; a
        warning line is one preemption at least even when its count does not parse."""
        counted = sum(s.preemptions or 0 for s in self.samples)
        return max(counted, self.cumulative_preemptions, len(self.warnings))

    def batch_samples(self) -> list[Sample]:
        """What a rule about one engine's batch reads (is its KV cache full while its own queue waits, how many ran,
        against --max-num-seqs): each engine's samples for a data-parallel server, where the total adds two
        batches and pairs one engine's full cache with the other's queue; the timeline itself for one engine."""
        return [s for samples in self.engine_samples.values() for s in samples] or self.samples

    def since_start_floor(self) -> int | None:
        floors = [n for n in (self.since_start, self.finished_since_start) if n is not None]
        return max(floors) if floors else None

    def preemptions_at_least(self) -> int:
        """The window's count; a counter read once (no window to count in) stands for it as a floor since
        start-up. Where there is a window, a rate divides this, never the floor (which ``since_start_floor`` keeps)."""
        if self.metric_readings <= 1:
            return max(self.window_preemptions(), self.since_start_floor() or 0)
        return self.window_preemptions()

    sample_unit: str = "line"  # "scrape" when the samples came from metrics

    def show(self, sample: Sample) -> str:
        text = describe(sample, self.sample_unit)
        if self.engine_samples and sample.engine is not None:  # one engine's sample of a data-parallel server
            where, _, rest = text.partition(": ")
            text = f"{where}, engine {sample.engine}: {rest}"
        return text


@dataclass
class Finding:
    id: str
    title: str
    confidence: str  # "high" | "medium" | "low"
    why: str  # why that confidence
    evidence: list[str]
    fix: str

    def to_json_dict(self) -> dict:
        # The contract has no field for the reason: it leads the evidence list.
        return {
            "id": self.id,
            "title": self.title,
            "confidence": self.confidence,
            "evidence": [f"confidence {self.confidence}: {self.why}", *self.evidence],
            "fix": self.fix,
        }


def describe(sample: Sample, unit: str = "line") -> str:
    """One sample as evidence text: 'line 12 (06-16 21:24:15): running 12, waiting 3, KV 99.1%, gen 80.0 tok/s'."""
    parts = []
    for label, value, kind in (
        ("running", sample.running, "n"),
        ("waiting", sample.waiting, "n"),
        ("swapped", sample.swapped, "n"),
        ("GPU KV", sample.gpu_kv_usage, "%"),
        ("CPU KV", sample.cpu_kv_usage, "%"),
        ("gen", sample.gen_tps, "t"),
        ("prefix hits", sample.prefix_hit_rate, "%"),
        ("preemptions", sample.preemptions, "n"),
    ):
        if value is None:
            continue
        parts.append(
            f"{label} {value:.1%}"
            if kind == "%"
            else f"{label} {value:.1f} tok/s"
            if kind == "t"
            else f"{label} {value}"
        )
    where = f"{unit} {sample.line}" if sample.line is not None else "sample"
    when = f" ({sample.time})" if sample.time else ""
    return f"{where}{when}: " + ", ".join(parts)
