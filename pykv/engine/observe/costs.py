"""What every preemption cost, measured on this device, with a modelled PCIe figure beside swaps.

Recompute cost is the forward time spent re-prefilling the tokens whose KV was dropped. A step's
forward time is shared among its tokens by count, so a re-prefill chunk of r tokens in a step of
n tokens that took t seconds is charged ``t * r / n`` (attention makes long chunks a little dearer
per token than this; the apportioning is stated wherever the figure is shown), and the same share of
the engine thread's CPU time in that forward pass (``recompute_cpu_s``, ``time.thread_time``: the time
the thread waited for a CPU busy with other work is not in it). Tokens the prefix cache still held at
re-admission are not recomputed and are counted apart.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pykv.border.pcie import modelled_copy_seconds
from pykv.border.step_report import PreemptionView, ScheduledChunk
from pykv.engine.kv.cache_engine import CopyTiming
from pykv.engine.sched.scheduler import PreemptionEvent


@dataclass(frozen=True)
class RecomputeStats:
    """Re-prefill work since the last hand-over (see ``CostLedger.make_recompute_stats``), and all the prefill
    time it is a share of: the recompute tax is re-prefilled tokens over all prefill tokens (``pykv:prefill_tokens``),
    and ``seconds / prefill_seconds``."""

    tokens: int
    seconds: float
    prefill_seconds: float = 0.0  # forward time apportioned to them


def recompute_tax(recomputed: float, prefill: float) -> float | None:
    """The share of prefill work that recomputed tokens already computed once; None before any prefill."""
    return recomputed / prefill if prefill > 0 else None


class CostLedger:
    """Every preemption's cost record, and the open ones still waiting for their request to recover.

    A record is a frozen ``PreemptionView`` (the one definition of its fields); a later step's news (the
    swap-in, the re-prefill) replaces it in ``records`` with an updated copy, so a view handed out earlier
    never changes. Only the engine's step calls the ``on_*`` methods."""

    def __init__(self, bytes_per_block: int, device: str, pcie_bandwidth_gbps: float, pcie_copy_overhead_us: float):
        self.bytes_per_block = bytes_per_block
        self.device = device
        self.bandwidth, self.overhead = pcie_bandwidth_gbps, pcie_copy_overhead_us
        self.records: list[PreemptionView] = []  # every preemption so far, in order, each as it stands now
        self.open: dict[str, int] = {}  # request id -> the index in records of its last, unrecovered preemption
        self._recompute_tokens, self._recompute_s = 0, 0.0  # since the last make_recompute_stats()
        self._prefill_s = 0.0  # forward time of all prefill tokens, since the last make_recompute_stats()

    def on_preempt(self, event: PreemptionEvent, swap_out: CopyTiming | None) -> PreemptionView:
        record = PreemptionView(
            step=event.step,
            request_id=event.request_id,
            mode=event.mode,
            num_blocks=event.num_blocks,
            num_tokens=event.num_tokens,
            device=self.device,
            # a swap bills the bytes it copied (a block shared with a sibling sequence crosses once)
            num_bytes=swap_out.num_bytes if swap_out is not None else event.num_blocks * self.bytes_per_block,
            fallback=event.fallback,
            reason=event.reason,
            why=event.why,
        )
        if swap_out is not None:
            record = replace(
                record,
                swap_out_s=swap_out.seconds,
                swap_out_cpu_s=swap_out.cpu_s,
                swap_copies=swap_out.num_copies,
                blocks_copied=swap_out.num_bytes // self.bytes_per_block,
                modelled_pcie_out_s=modelled_copy_seconds(
                    swap_out.num_bytes, swap_out.num_copies, self.bandwidth, self.overhead
                ),
            )
        self.records.append(record)
        if event.mode != "abort":
            self.open[event.request_id] = len(self.records) - 1
        return record

    def on_swap_in(self, request_id: str, timing: CopyTiming, step: int) -> PreemptionView:
        index = self.open.pop(request_id)
        record = self.records[index] = replace(
            self.records[index],
            swap_in_s=timing.seconds,
            swap_in_cpu_s=timing.cpu_s,
            modelled_pcie_in_s=modelled_copy_seconds(
                timing.num_bytes, timing.num_copies, self.bandwidth, self.overhead
            ),
            recovered_step=step,
            steps_lost=step - self.records[index].step,
        )
        return record

    def on_forward(self, chunks: list[ScheduledChunk], forward_s: float, step: int, forward_cpu_s: float = 0.0) -> None:
        """Charge this step's re-prefill tokens (and all its prefill tokens) their share of the forward time (wall, and
        the engine thread's CPU time, ``forward_cpu_s``). An orphaned chunk (vLLM 0.10.2's victim left in the batch)
        computed nothing: it is charged nothing."""
        chunks = [c for c in chunks if not c.orphaned]
        total = sum(c.num_new_tokens for c in chunks)
        prefill = sum(c.num_new_tokens for c in chunks if c.is_prefill)
        self._prefill_s += forward_s * prefill / total if total else 0.0
        for chunk in chunks:
            index = self.open.get(chunk.request_id)
            if index is None or self.records[index].mode != "recompute":
                continue
            record = self.records[index]
            end = chunk.start + chunk.num_new_tokens
            redone = max(0, min(end, record.num_tokens) - chunk.start)
            recovered = end >= record.num_tokens
            self.records[index] = replace(
                record,
                prefix_hit_tokens=record.prefix_hit_tokens + min(chunk.num_cached_tokens, record.num_tokens),
                loaded_tokens=record.loaded_tokens
                + max(
                    0,
                    min(chunk.num_cached_tokens + chunk.num_loaded_tokens, record.num_tokens) - chunk.num_cached_tokens,
                ),
                recomputed_tokens=record.recomputed_tokens + redone,
                recompute_s=record.recompute_s + forward_s * redone / total,
                recompute_cpu_s=record.recompute_cpu_s + forward_cpu_s * redone / total,
                recovered_step=step if recovered else record.recovered_step,
                steps_lost=step - record.step if recovered else record.steps_lost,
            )
            self._recompute_tokens += redone
            self._recompute_s += forward_s * redone / total
            if recovered:
                del self.open[chunk.request_id]

    def make_recompute_stats(self) -> RecomputeStats:
        """Get (and reset) the re-prefill work charged since the last call: the metrics take deltas,
        as vLLM's ``make_prefix_cache_stats()`` hands over prefix-cache stats."""
        stats = RecomputeStats(self._recompute_tokens, self._recompute_s, self._prefill_s)
        self._recompute_tokens, self._recompute_s = 0, 0.0
        self._prefill_s = 0.0
        return stats

    def on_finished(self, request_id: str) -> None:
        self.open.pop(request_id, None)

    def totals_for(self, request_id: str) -> dict[str, float]:
        """A request's preemption bill so far: recomputed tokens and time, swapped bytes and time."""
        mine = [r for r in self.records if r.request_id == request_id]
        return {
            "recomputed_tokens": sum(r.recomputed_tokens for r in mine),
            "recompute_s": sum(r.recompute_s for r in mine),
            "swapped_bytes": sum(r.num_bytes for r in mine if r.mode == "swap"),
            "swap_s": sum((r.swap_out_s or 0.0) + (r.swap_in_s or 0.0) for r in mine),
        }
