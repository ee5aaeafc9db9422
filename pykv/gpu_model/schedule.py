"""A real pykv run priced on a target: the modelled clock, each preemption's bill, each request's
modelled TTFT and TPOT. Pure functions of the engine's step reports and snapshots.

A recompute's bill is what re-prefilling the victim's lost tokens added to the steps that did it
(each such step priced with and without those tokens), and **the delay it added to the other
requests in those steps**: every one of them waited that extra time for its token. A swap's bill is
its copies out and back in, which every request running in those steps waited for too::

    step j:  [ b decode | c re-prefill 416 tokens ]      modelled 14.1 ms
             [ b decode ]                                 modelled  5.9 ms without c's tokens
             c's bill += 8.2 ms;  delay to others += 8.2 ms x 1 request (b)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from typing import Iterable, Sequence

from pykv.border.snapshot import Snapshot
from pykv.border.step_report import PreemptionView, StepReport
from pykv.gpu_model.estimate import Chunk, Estimate


@dataclass(frozen=True)
class ModelledBill:
    """One preemption priced on the target (ms, modelled)."""

    step: int
    request_id: str
    mode: str  # "recompute" | "swap"
    tokens: int  # tokens whose KV was lost (recompute) or moved (swap)
    modelled_ms: float  # recompute: the re-prefill's share of its steps; swap: the copies out and in
    delay_to_others_ms: float  # that time x the other requests running in the same steps, summed
    others: list[str] = field(default_factory=list)  # the requests that waited
    seed_formula_ms: float = 0.0  # tokens x per-token prefill time (the rule of thumb)
    complete: bool = False  # the request has recomputed (or copied back) everything it lost
    steps: list[int] = field(default_factory=list)  # the steps that paid it
    step_ms: list[float] = field(default_factory=list)  # what each of them paid
    superseded: bool = False  # preempted again before it recovered: the next preemption's bill carries on
    blocks: int = 0  # swap: the whole blocks copied each way (recompute: the blocks freed)
    kv_bytes: int = 0  # swap: the bytes those blocks hold in the target model's KV, each way (what is priced)

    @property
    def note(self) -> str | None:
        """Why the bill is 0 or near 0, in words for wherever it is shown; None for an ordinary bill."""
        if self.superseded and not self.complete:
            return "preempted again before it recovered: its re-prefill is billed to the next preemption"
        if not self.complete and self.mode == "swap":  # a swap has no re-prefill: its copy back in is still to come
            return "not swapped back in yet (the copy back in is billed when it happens)"
        if not self.complete and self.modelled_ms == 0:
            return "not re-prefilled yet (pending)"
        if not self.complete:
            return "partly paid so far (re-prefill still running)"
        if self.mode == "recompute" and self.modelled_ms < MARGINAL_SHARE * self.seed_formula_ms:
            return (
                f"marginal: the re-prefill rode in steps the target's weight reads already paid for "
                f"(tokens x per-token prefill would say {self.seed_formula_ms:.2f} ms)"
            )
        return None


MARGINAL_SHARE = 0.05  # a recompute bill under 5% of tokens x per-token prefill time is called marginal


@dataclass(frozen=True)
class ModelledView:
    """What a lesson path ``modelled.FIELD`` reads: the run so far, priced on ``target``."""

    target: str
    clock_ms: float  # modelled time of every step so far
    last_step_ms: float | None
    prefill_us_per_token: float  # a 2,048-token prefill's time per token on the target
    decode_step_ms: float  # one decode step of one short sequence (the floor of every step)
    compute_bound_from_tokens: float  # tokens per step past which the weight GEMMs are compute-bound
    preemptions: list[ModelledBill]


def per_token_prefill_us(est: Estimate, tokens: int = 2048) -> float:
    """The seed's "per-token prefill time": a long prefill's time over its tokens."""
    return est.prefill_ms(tokens) / tokens * 1e3


def _chunks(report: StepReport, without: tuple[str, int] | None = None) -> list[Chunk]:
    """The step's chunks; ``without=(request, n)`` drops the first n tokens of that request's chunk."""
    out = []
    for ch in report.chunks:
        start, tokens = ch.start, ch.num_new_tokens
        if without is not None and ch.request_id == without[0]:
            start, tokens = start + without[1], tokens - without[1]
        out.append(Chunk(start, tokens))
    return out


def bills(est: Estimate, reports: Sequence[StepReport], block_size: int | None = None) -> list[ModelledBill]:
    """Every recompute and swap preemption in ``reports`` (in order), priced on ``est``."""
    per_token = per_token_prefill_us(est) * 1e-3
    out = []
    for i, report in enumerate(reports):
        for p in report.preempted:
            if p.mode == "recompute":
                out.append(_recompute_bill(est, p, islice(reports, i + 1, None), per_token))
            elif p.mode == "swap":
                out.append(_swap_bill(est, p, report, islice(reports, i + 1, None), block_size, per_token))
    return out


def _recompute_bill(est: Estimate, p: PreemptionView, later: Iterable[StepReport], per_token: float) -> ModelledBill:
    cost = delay = 0.0
    others: list[str] = []
    steps: list[int] = []
    paid: list[float] = []
    complete = superseded = False
    for report in later:
        if any(q.request_id == p.request_id for q in report.preempted):
            superseded = True
            break  # preempted again before it recovered: the next bill takes over
        chunk = next((c for c in report.chunks if c.request_id == p.request_id), None)
        if chunk is None or chunk.start >= p.num_tokens:
            if chunk is not None:
                complete = True
                break
            continue
        redone = min(chunk.start + chunk.num_new_tokens, p.num_tokens) - chunk.start
        extra = (
            est.forward_cost(_chunks(report)).total - est.forward_cost(_chunks(report, (p.request_id, redone))).total
        )
        waiting = [c.request_id for c in report.chunks if c.request_id != p.request_id]
        cost, delay = cost + extra, delay + extra * len(waiting)
        others += [r for r in waiting if r not in others]
        steps.append(report.step)
        paid.append(extra)
        if chunk.start + chunk.num_new_tokens >= p.num_tokens:
            complete = True
            break
    return ModelledBill(
        p.step,
        p.request_id,
        "recompute",
        p.num_tokens,
        cost,
        delay,
        others,
        p.num_tokens * per_token,
        complete,
        steps,
        paid,
        superseded,
        blocks=p.num_blocks,
    )


def _swap_bill(
    est: Estimate,
    p: PreemptionView,
    report: StepReport,
    later: Iterable[StepReport],
    block_size: int | None,
    per_token: float,
) -> ModelledBill:
    out_ms = est.swap_ms(p, "d2h", block_size)
    waiting = [c.request_id for c in report.chunks]
    cost, delay, complete = out_ms, out_ms * len(waiting), False
    steps, paid = [report.step], [out_ms]
    for later_report in later:
        back = next((q for q in later_report.swapped_in if q.request_id == p.request_id), None)
        if back is not None:
            in_ms = est.swap_ms(back, "h2d", block_size)
            waiting_in = [c.request_id for c in later_report.chunks if c.request_id != p.request_id]
            cost, delay, complete = cost + in_ms, delay + in_ms * len(waiting_in), True
            waiting += [r for r in waiting_in if r not in waiting]
            steps.append(later_report.step)
            paid.append(in_ms)
            break
    return ModelledBill(
        p.step,
        p.request_id,
        "swap",
        p.num_tokens,
        cost,
        delay,
        waiting,
        p.num_tokens * per_token,
        complete,
        steps,
        paid,
        blocks=p.num_blocks if p.blocks_copied is None else p.blocks_copied,
        kv_bytes=est.swap_bytes(p, block_size),
    )


@dataclass(frozen=True)
class RunTotals:
    """A whole run priced on the target (modelled)."""

    modelled_s: float
    tokens_per_s: float  # output tokens / modelled_s
    recompute_s: float  # the recompute bills
    swap_s: float  # the swap bills (copies out and in)
    delay_to_others_s: float  # what the preemptions made the other requests wait, summed over them


def run_totals(est: Estimate, reports: Sequence[StepReport], block_size: int | None, output_tokens: int) -> RunTotals:
    total = sum(step_times_ms(est, reports, block_size)) * 1e-3
    priced = bills(est, reports, block_size)
    return RunTotals(
        total,
        output_tokens / total if total > 0 else 0.0,
        sum(b.modelled_ms for b in priced if b.mode == "recompute") * 1e-3,
        sum(b.modelled_ms for b in priced if b.mode == "swap") * 1e-3,
        sum(b.delay_to_others_ms for b in priced) * 1e-3,
    )


def step_times_ms(est: Estimate, reports: Sequence[StepReport], block_size: int | None = None) -> list[float]:
    return [est.step_ms(r, block_size) for r in reports]


def modelled_view(est: Estimate, snapshots: Sequence[Snapshot]) -> ModelledView:
    """The run ``snapshots`` record (step 0 first), priced on ``est``."""
    reports = [s.report for s in snapshots if s.report is not None]
    block_size = snapshots[-1].block_size if snapshots else None
    times = step_times_ms(est, reports, block_size)
    return ModelledView(
        est.label,
        sum(times),
        times[-1] if times else None,
        per_token_prefill_us(est),
        est.decode_step_ms(1, 128),
        est.linear_switch_tokens,
        bills(est, reports, block_size),
    )


@dataclass(frozen=True)
class RequestTimes:
    ttft_ms: float | None  # modelled: arrival to first token
    tpot_ms: float | None  # modelled: mean time per output token after the first


def request_times(snapshots: Sequence[Snapshot], step_ms: Sequence[float]) -> dict[str, RequestTimes]:
    """Modelled TTFT/TPOT of every request seen in ``snapshots``; ``step_ms[k]`` is the modelled time of
    the step that led to ``snapshots[k + 1]``. A request added when the engine had run ``a`` steps
    (``RequestView.arrival_step``) waits from ``clock[a]``: one added before step ``a + 1`` and prefilled in
    it has that step's time as its TTFT, never 0."""
    clock = [0.0]
    for ms in step_ms:
        clock.append(clock[-1] + ms)
    arrived: dict[str, int] = {}
    first: dict[str, int] = {}
    last: dict[str, tuple[int, int]] = {}  # request -> (snapshot index, output tokens) when it last grew
    for k, snap in enumerate(snapshots):
        for r in snap.requests:  # it waits from its arrival: a request prefilled in its first step paid that step
            arrived.setdefault(r.request_id, min(r.arrival_step, k))
            if r.num_output_tokens >= 1:
                first.setdefault(r.request_id, k)
            if r.request_id not in last or r.num_output_tokens > last[r.request_id][1]:
                last[r.request_id] = (k, r.num_output_tokens)
    out = {}
    for rid, k0 in arrived.items():
        parent = rid.rsplit("#", 1)[0]  # a forked sequence (parallel sampling) arrived with its request
        k0 = arrived.get(parent, k0) if "#" in rid else k0
        ttft = tpot = None
        if rid in first:
            ttft = clock[first[rid]] - clock[k0]
            k1, n = last[rid]
            if n > 1:
                tpot = (clock[k1] - clock[first[rid]]) / (n - 1)
        out[rid] = RequestTimes(ttft, tpot)
    return out
