"""What every preemption cost, measured on this device, with a modelled PCIe figure beside swaps.

Recompute cost is the forward time spent re-prefilling the tokens whose KV was dropped. A step's
forward time is shared among its tokens by count, so a re-prefill chunk of r tokens in a step of
n tokens that took t seconds is charged ``t * r / n`` (attention makes long chunks a little dearer
per token than this; the apportioning is stated wherever the figure is shown). Tokens the prefix
cache still held at re-admission are not recomputed and are counted apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from pykv.border.pcie import modelled_copy_seconds
from pykv.border.step_report import PreemptionView, ScheduledChunk
from pykv.engine.kv.cache_engine import CopyTiming
from pykv.engine.sched.scheduler import PreemptionEvent


@dataclass
class PreemptionCost:
    """One preemption and its measured cost; the recovery fields fill in on later steps."""

    step: int
    request_id: str
    mode: str  # "recompute" | "swap" | "abort"
    num_blocks: int
    num_tokens: int  # tokens whose KV was dropped (recompute) or moved (swap)
    num_bytes: int  # bytes of that KV
    device: str  # where the times were measured
    fallback: Optional[str] = None
    reason: Optional[str] = None
    why: Optional[str] = None  # why the victim policy chose this request
    blocks_copied: Optional[int] = None  # swap: blocks it copied (a block shared with a sibling sequence crosses once)
    # swap: measured copy times and the modelled PCIe equivalent
    swap_out_s: Optional[float] = None
    swap_in_s: Optional[float] = None
    swap_copies: Optional[int] = None  # copies issued each way
    modelled_pcie_out_s: Optional[float] = None
    modelled_pcie_in_s: Optional[float] = None
    # recompute: what the re-prefill cost
    prefix_hit_tokens: int = 0  # dropped tokens the prefix cache gave back at re-admission
    loaded_tokens: int = 0  # dropped tokens loaded back from the CPU offloading tier at re-admission
    recomputed_tokens: int = 0
    recompute_s: float = 0.0  # apportioned forward time, see the module docstring
    # both
    recovered_step: Optional[int] = None  # step the request had computed all its lost tokens again
    steps_lost: Optional[int] = None

    @property
    def swap_out_bandwidth(self) -> Optional[float]:
        """Measured bytes/s of the swap-out copy."""
        return self.num_bytes / self.swap_out_s if self.swap_out_s else None

    @property
    def swap_in_bandwidth(self) -> Optional[float]:
        return self.num_bytes / self.swap_in_s if self.swap_in_s else None

    def view(self) -> PreemptionView:
        """A frozen copy, as it stands now."""
        return PreemptionView(**dataclasses.asdict(self), swap_out_bandwidth=self.swap_out_bandwidth,
                              swap_in_bandwidth=self.swap_in_bandwidth)


@dataclass(frozen=True)
class RecomputeStats:
    """Re-prefill work since the last hand-over (see ``CostLedger.make_recompute_stats``), and all the prefill
    time it is a share of: the recompute tax is re-prefilled tokens over all prefill tokens (``pykv:prefill_tokens``),
    and ``seconds / prefill_seconds``."""

    tokens: int
    seconds: float
    prefill_seconds: float = 0.0  # forward time apportioned to them


def recompute_tax(recomputed: float, prefill: float) -> Optional[float]:
    """The share of prefill work that recomputed tokens already computed once; None before any prefill."""
    return recomputed / prefill if prefill > 0 else None


class CostLedger:
    """Every preemption's cost record, and the open ones still waiting for their request to recover."""

    def __init__(self, bytes_per_block: int, device: str, pcie_bandwidth_gbps: float, pcie_copy_overhead_us: float):
        self.bytes_per_block = bytes_per_block
        self.device = device
        self.bandwidth, self.overhead = pcie_bandwidth_gbps, pcie_copy_overhead_us
        self.records: list[PreemptionCost] = []
        self.open: dict[str, PreemptionCost] = {}  # request id -> its last, unrecovered preemption
        self._recompute_tokens, self._recompute_s = 0, 0.0  # since the last make_recompute_stats()
        self._prefill_s = 0.0  # forward time of all prefill tokens, since the last make_recompute_stats()

    def on_preempt(self, event: PreemptionEvent, swap_out: Optional[CopyTiming]) -> PreemptionCost:
        record = PreemptionCost(
            step=event.step, request_id=event.request_id, mode=event.mode, num_blocks=event.num_blocks,
            num_tokens=event.num_tokens, device=self.device,
            # a swap bills the bytes it copied (a block shared with a sibling sequence crosses once)
            num_bytes=swap_out.num_bytes if swap_out is not None else event.num_blocks * self.bytes_per_block,
            fallback=event.fallback, reason=event.reason, why=event.why,
        )
        if swap_out is not None:
            record.swap_out_s, record.swap_copies = swap_out.seconds, swap_out.num_copies
            record.blocks_copied = swap_out.num_bytes // self.bytes_per_block
            record.modelled_pcie_out_s = modelled_copy_seconds(swap_out.num_bytes, swap_out.num_copies,
                                                               self.bandwidth, self.overhead)
        self.records.append(record)
        if event.mode != "abort":
            self.open[event.request_id] = record
        return record

    def on_swap_in(self, request_id: str, timing: CopyTiming, step: int) -> PreemptionCost:
        record = self.open.pop(request_id)
        record.swap_in_s = timing.seconds
        record.modelled_pcie_in_s = modelled_copy_seconds(timing.num_bytes, timing.num_copies,
                                                          self.bandwidth, self.overhead)
        record.recovered_step, record.steps_lost = step, step - record.step
        return record

    def on_forward(self, chunks: list[ScheduledChunk], forward_s: float, step: int) -> None:
        """Charge this step's re-prefill tokens (and all its prefill tokens) their share of the forward time."""
        total = sum(c.num_new_tokens for c in chunks)
        prefill = sum(c.num_new_tokens for c in chunks if c.is_prefill)
        self._prefill_s += forward_s * prefill / total if total else 0.0
        for chunk in chunks:
            record = self.open.get(chunk.request_id)
            if record is None or record.mode != "recompute":
                continue
            record.prefix_hit_tokens += min(chunk.num_cached_tokens, record.num_tokens)
            record.loaded_tokens += max(0, min(chunk.num_cached_tokens + chunk.num_loaded_tokens, record.num_tokens)
                                        - chunk.num_cached_tokens)
            end = chunk.start + chunk.num_new_tokens
            redone = max(0, min(end, record.num_tokens) - chunk.start)
            record.recomputed_tokens += redone
            record.recompute_s += forward_s * redone / total
            self._recompute_tokens += redone
            self._recompute_s += forward_s * redone / total
            if end >= record.num_tokens:
                record.recovered_step, record.steps_lost = step, step - record.step
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
