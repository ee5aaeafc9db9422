"""What one engine step did, as frozen data: the chunks it ran, the preemptions it made (with what
they cost so far) and the requests it finished. A border type: it imports nothing from the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pykv.border.request import RequestOutput


@dataclass(frozen=True)
class ScheduledChunk:
    """``num_new_tokens`` tokens of one request run this step, starting at ``start``."""

    request_id: str
    start: int  # first token position computed this step (= num_computed_tokens before the step)
    num_new_tokens: int
    is_prefill: bool  # False for a single-token decode
    num_cached_tokens: int = 0  # prefix-cache hit taken at admission this step
    num_loaded_tokens: int = 0  # tokens loaded from the CPU offloading tier at admission this step (after the hit)
    # vLLM 0.10.2: the request was preempted later in this step, yet its chunk stays in the batch: charged to the
    # budget, counted from token 0 (its reset progress), computed by nobody; it resumes past these tokens
    orphaned: bool = False


@dataclass(frozen=True)
class PreemptionView:
    """One preemption and what it cost, as known when the view was taken: the one definition of a preemption
    record. ``pykv.engine.observe.costs.CostLedger`` makes them and, as the recovery fields fill in on later
    steps, replaces its record with an updated copy; a view once handed out never changes."""

    step: int
    request_id: str
    mode: str  # "recompute" | "swap" | "abort"
    num_blocks: int
    num_tokens: int  # tokens whose KV was dropped (recompute) or moved (swap)
    num_bytes: int  # bytes of that KV
    device: str  # where the times were measured
    fallback: str | None = None
    reason: str | None = None
    why: str | None = None  # why the victim policy chose this request
    blocks_copied: int | None = None  # swap: blocks it copied (a block shared with a sibling sequence crosses once)
    swap_out_s: float | None = None  # measured copy times
    swap_in_s: float | None = None
    swap_out_cpu_s: float | None = None  # the engine thread's CPU time over the same copies (time.thread_time)
    swap_in_cpu_s: float | None = None
    swap_copies: int | None = None  # copies issued each way
    modelled_pcie_out_s: float | None = None  # the same copies modelled over PCIe (not measured)
    modelled_pcie_in_s: float | None = None
    prefix_hit_tokens: int = 0  # dropped tokens the prefix cache gave back at re-admission
    loaded_tokens: int = 0  # dropped tokens loaded back from the CPU offloading tier at re-admission
    recomputed_tokens: int = 0
    recompute_s: float = 0.0  # apportioned forward time (see pykv.engine.observe.costs)
    recompute_cpu_s: float = 0.0  # the same share of the forward passes' engine-thread CPU time (time.thread_time)
    recovered_step: int | None = None  # step the request had computed all its lost tokens again
    steps_lost: int | None = None

    @property
    def swap_out_bandwidth(self) -> float | None:
        """Measured bytes/s of the swap-out copy; None where nothing was copied out."""
        return self.num_bytes / self.swap_out_s if self.swap_out_s else None

    @property
    def swap_in_bandwidth(self) -> float | None:
        return self.num_bytes / self.swap_in_s if self.swap_in_s else None

    @classmethod
    def from_dict(cls, raw: dict) -> "PreemptionView":
        """From ``dataclasses.asdict``; the bandwidths older JSON stored beside the times are derived now."""
        return cls(**{k: v for k, v in raw.items() if k not in ("swap_out_bandwidth", "swap_in_bandwidth")})


@dataclass(frozen=True)
class CopyOnWrite:
    """A shared partial block copied before ``request_id`` appended to it (parallel sampling)."""

    request_id: str
    src_block: int
    dst_block: int


@dataclass(frozen=True)
class OffloadTransfer:
    """One step's copies between the device pool and V1's CPU offloading tier: measured on ``device``, with the
    same copy modelled over PCIe (labelled modelled wherever shown)."""

    direction: str  # "store" (device -> CPU tier) | "load" (CPU tier -> device)
    num_blocks: int
    num_bytes: int
    seconds: float  # measured copy time
    modelled_pcie_s: float  # the same bytes and copies over the modelled PCIe link
    device: str

    @property
    def bandwidth(self) -> float | None:
        """Measured bytes/s."""
        return self.num_bytes / self.seconds if self.seconds > 0 else None


# Why the head of the waiting queue was not admitted, each a rule of the release the engine follows:
# "whole_input"   0.33.0: its whole current input must fit the free blocks first (scheduler_reserve_full_isl)
# "chunk_blocks"  V1: the blocks of this step's chunk (0.10.2 asks no more)
# "whole_prompt"  V0: every block of the sequence at once, and the 1% watermark left free (can_allocate)
# "max_num_seqs"  the running sequences are at max_num_seqs
# "token_budget"  the step's max_num_batched_tokens is spent
# "prompt_over_budget"  chunked prefill off: its prompt is longer than the budget left
# "preempted_this_step" V1 admits nobody in a step that preempted
# "swapped_first" V0 without chunked prefill admits no prompt while requests are swapped out
WaitRule = Literal[
    "whole_input",
    "chunk_blocks",
    "whole_prompt",
    "max_num_seqs",
    "token_budget",
    "prompt_over_budget",
    "preempted_this_step",
    "swapped_first",
]


@dataclass(frozen=True)
class AdmissionWait:
    """Why the head of the waiting queue stayed there this step, as the scheduler found it (the queue behind it
    waits too: admission stops at the first request it cannot take). Block counts are those the scheduler saw."""

    request_id: str
    rule: WaitRule
    blocks_needed: int | None = None  # the free blocks the rule asks for, the watermark's included
    blocks_free: int | None = None
    watermark_blocks: int = 0  # of blocks_needed, those the watermark keeps free
    tokens: int | None = None  # the tokens the rule counted: its whole input, its chunk, its prompt
    limit: int | None = None  # max_num_seqs, or the token budget left


@dataclass(frozen=True)
class StepReport:
    """What one ``LLMEngine.step()`` did."""

    step: int
    scheduled: list[str]  # request ids run this step, in batch order
    chunks: list[ScheduledChunk]  # per scheduled request: start, tokens, prefill or decode
    preempted: list[PreemptionView]  # this step's preemptions, with the swap-out copy measured
    swapped_in: list[PreemptionView]  # swap preemptions that ended this step, swap-in measured
    finished: list[RequestOutput]  # finished, ignored or aborted this step
    num_batched_tokens: int
    forward_time_s: float  # measured forward pass, on `device`
    step_time_s: float  # measured whole step: schedule + copies + forward + sample + update
    device: str
    log_lines: list[str] = field(default_factory=list)  # vLLM-style log lines this step wrote
    recomputed_tokens: int = 0  # prefill tokens this step that recomputed KV a recompute preemption dropped
    offload: list[OffloadTransfer] = field(default_factory=list)  # loads (before the forward), stores (after)
    copy_on_write: list[CopyOnWrite] = field(default_factory=list)  # shared blocks copied before the forward
    forked: dict[str, list[str]] = field(default_factory=dict)  # request -> the sequences it forked this step
    head_wait: AdmissionWait | None = None  # why the head of the waiting queue was not admitted (None: it was, or none)

    @property
    def recompute_tax(self) -> float | None:
        """This step's share of prefill tokens that recomputed dropped KV; None in a step with no prefill."""
        prefill = sum(c.num_new_tokens for c in self.chunks if c.is_prefill and not c.orphaned)
        return self.recomputed_tokens / prefill if prefill else None

    @classmethod
    def from_dict(cls, raw: dict) -> "StepReport":
        return cls(
            **raw
            | {
                "chunks": [ScheduledChunk(**c) for c in raw["chunks"]],
                "preempted": [PreemptionView.from_dict(p) for p in raw["preempted"]],
                "swapped_in": [PreemptionView.from_dict(p) for p in raw["swapped_in"]],
                "finished": [RequestOutput(**o) for o in raw["finished"]],
                "offload": [OffloadTransfer(**t) for t in raw.get("offload", [])],
                "copy_on_write": [CopyOnWrite(**c) for c in raw.get("copy_on_write", [])],
                "head_wait": None if raw.get("head_wait") is None else AdmissionWait(**raw["head_wait"]),
            }
        )
