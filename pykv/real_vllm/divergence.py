"""Where pykv and vLLM's real engine part: the first step at which their schedules differ, and whether each
request's tokens agree.

Both sides are read as the oracle reads them (``oracle/compare.py``): each step's batch (request, start, tokens, in
batch order), the requests preempted (in order), the waiting and running queues after the step (in queue order),
the free blocks (cached-but-free count as free; V1's null block does not) and the requests finished. pykv's side
comes from the Lab's history (``Snapshot`` and its ``StepReport``); one detail of how the Lab records it::

    snapshots[k] = the state after step k *and* after the requests added by hand at step k

so a request added by hand at step k (its ``arrival_step`` is k) is in snapshot k's waiting queue, but not in the
real engine's queue after step k: it is left out here, and compared from step k + 1 on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pykv.border.snapshot import Snapshot
from pykv.real_vllm.trace import RealStep, RealTrace

Chunk = tuple[str, int, int]  # (request id, start, tokens)


@dataclass(frozen=True)
class StepRecord:
    """One side's step, as compared."""

    step: int
    batch: tuple[Chunk, ...]
    preempted: tuple[str, ...]
    waiting: tuple[str, ...]
    running: tuple[str, ...]
    free_blocks: int
    finished: tuple[str, ...]


# What is compared, in the order a step's differences are reported (the first one found is the banner's).
FIELDS = {
    "batch": "the batch (request, start, tokens)",
    "preempted": "the requests preempted",
    "waiting": "the waiting queue",
    "running": "the running queue",
    "free_blocks": "the free blocks",
    "finished": "the requests finished",
}


@dataclass(frozen=True)
class Divergence:
    step: int
    what: str  # a key of FIELDS, or "length": one side's run ended before the other's
    pykv: str
    vllm: str

    def line(self) -> str:
        if self.what == "length":
            return f"Step {self.step}: {self.pykv}; {self.vllm}."
        return f"Step {self.step}, {FIELDS[self.what]}: pykv {self.pykv}, vLLM {self.vllm}."


def pykv_record(snapshot: Snapshot) -> StepRecord:
    """pykv's step that led to ``snapshot`` (not step 0: it has no report)."""
    report = snapshot.report
    assert report is not None, "step 0 ran nothing"
    added_after = {r.request_id for r in snapshot.requests if r.arrival_step == snapshot.step}
    return StepRecord(
        step=snapshot.step,
        batch=tuple((c.request_id, c.start, c.num_new_tokens) for c in report.chunks if not c.orphaned),
        preempted=tuple(p.request_id for p in report.preempted),
        waiting=tuple(r for r in snapshot.queues.get("waiting", []) if r not in added_after),
        running=tuple(snapshot.queues.get("running", [])),
        free_blocks=sum(b.pool == "gpu" and b.state in ("free", "cached") for b in snapshot.blocks),
        finished=tuple(o.request_id for o in report.finished),
    )


def real_record(step: RealStep) -> StepRecord:
    return StepRecord(
        step=step.step,
        batch=step.scheduled,
        preempted=step.preempted,
        waiting=step.waiting,
        running=step.running,
        free_blocks=step.free_blocks,
        finished=step.finished,
    )


def _show(value: object) -> str:
    if isinstance(value, tuple):
        if not value:
            return "none"
        if isinstance(value[0], tuple):
            return ", ".join(f"{rid} {start}+{n}" for rid, start, n in value)
        return ", ".join(map(str, value))
    return str(value)


def step_difference(ours: StepRecord, theirs: StepRecord) -> Divergence | None:
    """The first field (in ``FIELDS`` order) in which the two records of one step differ."""
    for name in FIELDS:
        a, b = getattr(ours, name), getattr(theirs, name)
        if a != b:
            return Divergence(ours.step, name, _show(a), _show(b))
    return None


def first_divergence(snapshots: Sequence[Snapshot], trace: RealTrace, pykv_done: bool) -> Divergence | None:
    """The first step of pykv's recorded ones (``snapshots``: the Lab's history from step 0) at which the real
    engine did something else; None where every step recorded agrees. ``pykv_done``: pykv's run has ended at its
    last snapshot (so a real run that goes on is a difference; else pykv may simply not be there yet)."""
    recorded = len(snapshots) - 1
    for snap, real in zip(snapshots[1:], trace.steps):
        found = step_difference(pykv_record(snap), real_record(real))
        if found is not None:
            return found
    ran = len(trace.steps)
    if ran < recorded:
        return Divergence(ran + 1, "length", f"pykv runs a step {ran + 1}", f"vLLM had finished after step {ran}")
    if pykv_done and ran > recorded:
        return Divergence(
            recorded + 1, "length", f"pykv had finished after step {recorded}", f"vLLM runs {ran - recorded} more"
        )
    return None


@dataclass(frozen=True)
class TokenCheck:
    """The finished requests of a step whose tokens both engines produced, and those whose tokens differ."""

    compared: tuple[str, ...]
    differ: tuple[str, ...]
    missing: tuple[str, ...]  # finished in pykv, but the real engine has no tokens for them

    @property
    def agree(self) -> bool:
        return not self.differ and not self.missing

    def line(self) -> str:
        if not self.compared and not self.missing:
            return "No request has finished yet: tokens are compared as requests finish."
        if self.agree:
            return f"Same tokens: all {len(self.compared)} finished requests produced the same tokens in both engines."
        parts = []
        if self.differ:
            parts.append(f"different tokens for {', '.join(self.differ)}")
        if self.missing:
            parts.append(f"no tokens from vLLM for {', '.join(self.missing)}")
        return f"Tokens of {len(self.compared) + len(self.missing)} finished requests: " + "; ".join(parts) + "."


def token_check(snapshot: Snapshot, trace: RealTrace) -> TokenCheck:
    """Compare the tokens of every request finished by ``snapshot`` with the real engine's (its whole run's)."""
    compared, differ, missing = [], [], []
    for r in snapshot.requests:
        if not r.status.startswith("finished"):
            continue
        real = trace.outputs.get(r.request_id)
        if real is None:
            missing.append(r.request_id)
            continue
        compared.append(r.request_id)
        if tuple(r.output_token_ids) != real:
            differ.append(r.request_id)
    return TokenCheck(tuple(compared), tuple(differ), tuple(missing))
