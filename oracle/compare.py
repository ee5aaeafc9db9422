"""Compare two traces of one case step by step; report the first divergence of each kind.

    python -m oracle.compare PYKV_TRACE.json VLLM_TRACE.json [--normalise NAME ...]

Kinds: ``batch`` (the scheduled requests with start and token count, in batch order), ``preemptions`` (ids and
mode, in order), ``swaps`` (swapped-in ids), ``queues`` (waiting, running, swapped, in order), ``free_blocks``,
``finished``, and ``length`` (one side ran more steps, or stopped with an error).

Normalisations hide a known, deliberate difference and must be asked for by name (NORMALISATIONS); none is on
by default.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from oracle.trace import StepTrace, Trace, load_traces

NORMALISATIONS = {
    "batch_as_set": "compare each step's scheduled chunks as a set: vLLM 0.6.3.post1 orders the batch prefills "
    "first (vllm/core/scheduler.py _schedule_chunked_prefill, scheduled_seq_groups), pykv in the "
    "order it scheduled them",
}
KINDS = ("batch", "preemptions", "swaps", "queues", "free_blocks", "finished", "length")


@dataclass
class Divergence:
    kind: str
    step: int  # 1-based step of the first difference
    ours: object
    theirs: object
    before: tuple[StepTrace | None, StepTrace | None] | None = None  # the step before, on each side

    def line(self) -> str:
        return f"{self.kind} at step {self.step}: pykv {self.ours!r} vs vllm {self.theirs!r}"


@dataclass
class Comparison:
    case: str
    ours: Trace
    theirs: Trace
    divergences: dict[str, Divergence] = field(default_factory=dict)

    @property
    def matched(self) -> bool:
        return not self.divergences

    @property
    def first(self) -> Divergence | None:
        order = {k: i for i, k in enumerate(KINDS)}
        return min(self.divergences.values(), key=lambda d: (d.step, order[d.kind]), default=None)

    def summary(self) -> str:
        o, t = self.ours.counters, self.theirs.counters
        head = (
            f"{self.case}: {'matched' if self.matched else 'DIVERGED'} ({len(self.ours.steps)} vs "
            f"{len(self.theirs.steps)} steps, {o.get('preemptions', 0)} vs {t.get('preemptions', 0)} "
            f"preemptions)"
        )
        return head if self.matched else f"{head}; first: {self.first.line()}"

    def report(self) -> str:
        lines = [self.summary()]
        for kind in KINDS:
            d = self.divergences.get(kind)
            if d is None:
                continue
            lines.append(f"  {d.line()}")
            if d.before is not None:
                ours, theirs = d.before
                lines.append(f"    step before on pykv: {_brief(ours)}")
                lines.append(f"    step before on vllm: {_brief(theirs)}")
        if self.theirs.error:
            lines.append(f"  vllm side error: {self.theirs.error.splitlines()[0]}")
        if self.ours.error:
            lines.append(f"  pykv side error: {self.ours.error.splitlines()[0]}")
        return "\n".join(lines)


def _brief(step: StepTrace | None) -> str:
    if step is None:
        return "(none)"
    return (
        f"#{step.step} batch={step.scheduled} preempted={step.preempted} waiting={step.waiting} "
        f"running={step.running} swapped={step.swapped} free={step.free_blocks} finished={step.finished}"
    )


def _views(step: StepTrace, normalise: set[str]) -> dict[str, object]:
    batch = [tuple(c) for c in step.scheduled]
    return {
        "batch": sorted(batch) if "batch_as_set" in normalise else batch,
        "preemptions": [tuple(p) for p in step.preempted],
        "swaps": list(step.swapped_in),
        "queues": {"waiting": step.waiting, "running": step.running, "swapped": step.swapped},
        "free_blocks": step.free_blocks,
        "finished": list(step.finished),
    }


def compare(ours: Trace, theirs: Trace, normalise: tuple[str, ...] | list[str] = ()) -> Comparison:
    unknown = set(normalise) - set(NORMALISATIONS)
    if unknown:
        raise ValueError(f"unknown normalisation(s) {sorted(unknown)}; known: {sorted(NORMALISATIONS)}")
    norm = set(normalise)
    result = Comparison(ours.case, ours, theirs)
    if theirs.error and not theirs.steps:
        result.divergences["length"] = Divergence("length", 0, ours.error, theirs.error.splitlines()[0])
        return result
    for i in range(min(len(ours.steps), len(theirs.steps))):
        a, b = _views(ours.steps[i], norm), _views(theirs.steps[i], norm)
        for kind in a:
            if kind not in result.divergences and a[kind] != b[kind]:
                before = (ours.steps[i - 1], theirs.steps[i - 1]) if i else (None, None)
                result.divergences[kind] = Divergence(kind, i + 1, a[kind], b[kind], before)
    if len(ours.steps) != len(theirs.steps) or bool(ours.error) != bool(theirs.error):
        n = min(len(ours.steps), len(theirs.steps))
        result.divergences["length"] = Divergence(
            "length",
            n + 1,
            f"{len(ours.steps)} steps{' ' + ours.error if ours.error else ''}",
            f"{len(theirs.steps)} steps{' ' + theirs.error.splitlines()[0] if theirs.error else ''}",
        )
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description="Compare a pykv trace with a vLLM trace.")
    ap.add_argument("ours")
    ap.add_argument("theirs")
    ap.add_argument("--normalise", nargs="*", default=[], choices=sorted(NORMALISATIONS))
    args = ap.parse_args()
    theirs = {t.case: t for t in load_traces(args.theirs)}
    code = 0
    for ours in load_traces(args.ours):
        result = compare(ours, theirs[ours.case], args.normalise)
        print(result.report())
        code |= not result.matched
    return code


if __name__ == "__main__":
    sys.exit(main())
