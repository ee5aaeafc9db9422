"""Requests as the scheduler sees them, their sampling parameters and their finished outputs."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import torch


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"  # back in the waiting queue after losing its KV cache
    SWAPPED = "swapped"  # KV cache moved to the CPU pool; waits in the swapped queue
    FINISHED_STOPPED = "finished_stopped"  # sampled a stop token
    FINISHED_LENGTH = "finished_length"  # reached max_tokens or max_model_len
    FINISHED_ABORTED = "finished_aborted"
    FINISHED_IGNORED = "finished_ignored"  # could never fit in the KV cache

    @property
    def is_finished(self) -> bool:
        return self.name.startswith("FINISHED")

    @property
    def finish_reason(self) -> Optional[str]:
        return {
            RequestStatus.FINISHED_STOPPED: "stop",
            RequestStatus.FINISHED_LENGTH: "length",
            RequestStatus.FINISHED_ABORTED: "abort",
            RequestStatus.FINISHED_IGNORED: "ignored",
        }.get(self)


@dataclass(frozen=True)
class SamplingParams:
    """How to pick each next token. ``temperature=0`` is greedy (the default)."""

    max_tokens: int = 16
    temperature: float = 0.0
    top_p: float = 1.0
    seed: Optional[int] = None
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {self.max_tokens!r}.")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 means greedy), got {self.temperature}.")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}.")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))


@dataclass
class Request:
    """One request's token ids and progress.

    ``all_token_ids = prompt + output``. The engine has computed KV for the first
    ``num_computed_tokens`` of them; the last token is always sampled-but-not-yet-computed while the
    request runs, so a decode step schedules exactly one new token::

        all_token_ids:  p0 p1 p2 p3 | o0 o1 o2
        computed KV:    [----------------]       num_computed_tokens = 6
        next step:                      [o2]     num_new_tokens = 1

    A recompute preemption sets ``num_computed_tokens`` back to 0 and keeps every token id.
    """

    request_id: str
    prompt_token_ids: list[int]
    sampling_params: SamplingParams
    arrival_step: int = 0
    eos_token_ids: frozenset[int] = frozenset()
    arrival_time: float = 0.0  # perf_counter() at add_request
    # Mutated by the scheduler only (scheduling, preemption, update_from_output, abort):
    status: RequestStatus = RequestStatus.WAITING
    num_computed_tokens: int = 0
    num_preemptions: int = 0
    tokens_since_preemption: int = 0  # output tokens produced since the last preemption (livelock guard)
    preemptions_without_progress: int = 0  # consecutive preemptions with no token produced in between
    output_token_ids: list[int] = field(default_factory=list)
    finish_message: Optional[str] = None  # why it was aborted or ignored
    first_token_step: Optional[int] = None
    first_token_time: Optional[float] = None  # perf_counter() when its first token was sampled
    generator: Optional[torch.Generator] = field(default=None, repr=False)

    @property
    def all_token_ids(self) -> list[int]:
        return self.prompt_token_ids + self.output_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_token_ids) + len(self.output_token_ids)

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    @property
    def max_total_tokens(self) -> int:
        """Tokens whose KV the request may need at once: prompt + max_tokens - 1 (the last sampled
        token is never fed back)."""
        return self.num_prompt_tokens + self.sampling_params.max_tokens - 1

    @property
    def is_finished(self) -> bool:
        return self.status.is_finished


@dataclass(frozen=True)
class RequestOutput:
    """A finished request, as returned by ``generate`` and in ``StepReport.finished``."""

    request_id: str
    prompt_token_ids: list[int]
    output_token_ids: list[int]
    text: str
    finish_reason: Optional[str]
    num_preemptions: int
    message: Optional[str] = None  # why it was ignored or aborted
    arrival_step: int = 0
    first_token_step: Optional[int] = None
    finish_step: Optional[int] = None
    ttft_s: Optional[float] = None  # measured wall time from add_request to the first token
    latency_s: Optional[float] = None  # measured wall time from add_request to finishing

    @property
    def tpot_s(self) -> Optional[float]:
        """Time per output token after the first (vLLM's TPOT)."""
        if self.ttft_s is None or self.latency_s is None or len(self.output_token_ids) < 2:
            return None
        return (self.latency_s - self.ttft_s) / (len(self.output_token_ids) - 1)
