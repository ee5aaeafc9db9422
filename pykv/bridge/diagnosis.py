"""The result: release, engine and what it can show, start-up facts, timeline, findings; the --json contract."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykv.bridge.base.records import Sample, ServerConfig, StartupFact
from pykv.bridge.base.release_guess import ReleaseGuess
from pykv.bridge.findings.evidence import Finding
from pykv.bridge.traces.reader import TraceParse


@dataclass
class Diagnosis:
    release: ReleaseGuess
    startup: list[StartupFact]
    samples: list[Sample]
    preemptions_at_least: int  # a floor: the window's count, or a counter's reading since start-up when larger
    findings: list[Finding]
    config: ServerConfig
    lines_read: int
    lines_skipped: int
    visibility: list[str] = field(default_factory=list)  # what this release can and cannot show
    notes: list[str] = field(default_factory=list)  # bounds hit, samples thinned, trace sample statement
    traces: list[TraceParse] = field(default_factory=list)  # the request traces read (what a replay samples)
    preemptions_counted: bool = True  # False: nothing read counts them (a V1 log without /metrics)
    # True: the count is a counter read once (one /metrics scrape): a floor since start-up, never a window's rate
    preemptions_since_start: bool = False
    # A data-parallel server's timeline per engine (engine index -> samples); `samples` is then their total. Empty
    # for one engine. Each engine's own queue and KV usage: a full engine with a queue is saturated whatever the total.
    engine_samples: dict[int, list[Sample]] = field(default_factory=dict)

    @property
    def engine(self) -> str | None:
        return self.release.engine

    # How many preemptions what was read can show (findings/count.py; set by diagnose.counted_as)
    preemptions_floor_since_start: int | None = None  # a counter's last reading: a floor since start-up
    preemptions_in_window: int = 0  # counted within what was read (the rise, V0's warnings): what a rate divides
    preemption_state: str = "counted"  # "counted" | "not counted" | "not visible" (the release cannot show them)
    preemption_text: str = ""  # the one line that says how many and how they were counted

    def to_json_dict(self) -> dict:
        return {
            "release": self.release.text,
            "engine": self.engine,
            "startup": [fact.to_json_dict() for fact in self.startup],
            "samples": [sample.to_json_dict() for sample in self.samples],
            "preemptions_at_least": self.preemptions_at_least,
            "findings": [finding.to_json_dict() for finding in self.findings],
            "lines_read": self.lines_read,
            "lines_skipped": self.lines_skipped,
        } | (  # a data-parallel server's engines, each its own timeline (the samples above are their total)
            {"engine_samples": {str(e): [s.to_json_dict() for s in ss] for e, ss in self.engine_samples.items()}}
            if self.engine_samples
            else {}
        )


def visibility_notes(release: ReleaseGuess) -> list[str]:
    if release.engine == "v0" and release.at_least("0.4.3") is False:
        return [
            f"vLLM {release.low}-{release.high} prints no preemption warning and exports no preemption counter "
            "(both came in 0.4.3): preemptions are not visible in this release; upgrade to see them"
            if not release.exact
            else f"vLLM {release.low} prints no preemption warning and exports no preemption counter (both came in "
            "0.4.3): preemptions are not visible in this release; upgrade to see them",
            "V0 swaps only multi-sequence groups (n>1, beam search); single requests are recomputed",
        ]
    if release.engine == "v0":
        straddles = release.at_least("0.4.3") is None
        return [
            "V0 logs one preemption warning per 50 preemptions: counts come from total_num_cumulative_preemption"
            + (" (from 0.4.3; earlier releases print none)" if straddles else ""),
            "V0 swaps only multi-sequence groups (n>1, beam search); single requests are recomputed",
            "V0 counters: vllm:num_preemptions_total"
            + (" (from 0.4.3)" if straddles else "")
            + ", vllm:gpu_cache_usage_perc, vllm:cpu_cache_usage_perc",
        ]
    if release.engine == "v1":
        return [
            "V1 logs no per-preemption line, and its stats line no count (0.11.1 to 0.34.0 have a 'Preemptions: N' "
            "field that is never printed): counts come from vllm:num_preemptions_total on /metrics",
            "V1 never swaps to CPU: a preempted request is recomputed",
        ]
    return ["engine not recognised: V0/V1-specific findings are not drawn"]
