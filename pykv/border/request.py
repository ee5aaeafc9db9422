"""Requests as the scheduler sees them, their sampling parameters and their finished outputs."""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pykv.border.config import show_value
from pykv.border.limits import MAX_N, MAX_STOP_TOKEN_IDS, MAX_TEMPERATURE, MAX_TOKENS, MIN_TEMPERATURE

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
    def finish_reason(self) -> str | None:
        return {
            RequestStatus.FINISHED_STOPPED: "stop",
            RequestStatus.FINISHED_LENGTH: "length",
            RequestStatus.FINISHED_ABORTED: "abort",
            RequestStatus.FINISHED_IGNORED: "length",  # vLLM V0's reason for a request it ignored
        }.get(self)


@dataclass(frozen=True)
class SamplingParams:
    """How to pick each next token. ``temperature=0`` is greedy (the default). ``n`` sequences are sampled from
    one prompt (parallel sampling): greedy ones are identical, as in vLLM."""

    max_tokens: int = 16
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    n: int = 1
    stop: object | None = None  # vLLM's stop strings: not supported (refused with a message, not a TypeError)

    def __post_init__(self) -> None:
        """Type and range checks, with no silent conversion (no ``int(1.5)``, no ``True`` as 1, no ``"0.5"``)."""
        if self.stop is not None:
            raise ValueError(
                f"stop (stop strings) is not supported: pykv stops on token ids; give "
                f"stop_token_ids=[...] instead of stop={show_value(self.stop)}."
            )
        if not _is_int(self.max_tokens) or not 1 <= self.max_tokens <= MAX_TOKENS:
            raise ValueError(
                f"max_tokens must be an integer >= 1 (at most {MAX_TOKENS}), got {show_value(self.max_tokens)}."
            )
        t = self.temperature
        if not _is_real(t):
            raise ValueError(
                f"temperature must be a number (0 means greedy), got {show_value(t)} ({type(t).__name__})."
            )
        if not math.isfinite(t) or t < 0 or (t != 0 and not MIN_TEMPERATURE <= t <= MAX_TEMPERATURE):
            raise ValueError(
                f"temperature must be >= 0: 0 (greedy) or a number in [{MIN_TEMPERATURE}, "
                f"{MAX_TEMPERATURE:g}], got {show_value(t)}; use 0 for greedy decoding."
            )
        if not _is_real(self.top_p) or not math.isfinite(self.top_p) or not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be a number in (0, 1] (1 keeps every token), got {show_value(self.top_p)}.")
        if self.seed is not None and (not _is_int(self.seed) or not 0 <= self.seed < 2**63):
            raise ValueError(f"seed must be None or an integer in [0, 2**63), got {show_value(self.seed)}.")
        ids = self.stop_token_ids
        if not isinstance(ids, (list, tuple)) or len(ids) > MAX_STOP_TOKEN_IDS:
            raise ValueError(
                f"stop_token_ids must be a list of token ids (at most {MAX_STOP_TOKEN_IDS}), "
                f"got {show_value(ids)}{f'; write [{ids}] for one id' if _is_int(ids) else ''}."
            )
        bad = [t for t in ids if not _is_int(t) or not 0 <= t < 2**31][:1]
        if bad:
            raise ValueError(f"stop_token_ids must hold non-negative integer token ids, got {show_value(bad[0])}.")
        if not _is_int(self.n) or not 1 <= self.n <= MAX_N:
            raise ValueError(f"n (sequences per prompt) must be an integer in [1, {MAX_N}], got {show_value(self.n)}.")
        if not isinstance(self.ignore_eos, bool):
            raise ValueError(f"ignore_eos must be True or False, got {show_value(self.ignore_eos)}.")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in ids))
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "temperature", float(t) if t else 0.0)
        object.__setattr__(self, "top_p", float(self.top_p))
        object.__setattr__(self, "seed", None if self.seed is None else int(self.seed))


def _is_int(value: object) -> bool:
    """An integer (numpy's too), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    """An int or float (numpy's too), not a bool, not text."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


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
    priority: int = 0  # vLLM's request priority: lower runs first (read by preemption_victim="priority")
    parent_id: str | None = None  # a forked sequence of parallel sampling: the request it forked from
    fork_generators: list = field(default_factory=list, repr=False)  # n > 1 and temperature: one per future sibling
    # Mutated by the scheduler only (scheduling, preemption, update_from_output, abort):
    status: RequestStatus = RequestStatus.WAITING
    num_computed_tokens: int = 0
    num_preemptions: int = 0
    undelivered_preemptions: int = 0  # preemptions not yet reported on an output (vLLM V1's event delivery)
    tokens_since_preemption: int = 0  # output tokens produced since the last preemption (livelock guard)
    preemptions_without_progress: int = 0  # consecutive preemptions with no token produced in between
    output_token_ids: list[int] = field(default_factory=list)
    finish_message: str | None = None  # why it was aborted or ignored
    first_token_step: int | None = None
    first_token_time: float | None = None  # perf_counter() when its first token was sampled
    # prompt tokens it did not compute at its first admission: prefix-cache hit plus blocks loaded from the CPU
    # offloading tier (V1; 0.33.0's PrefillStats, set in Scheduler.schedule while num_preemptions <= 0)
    first_admission_cached_tokens: int = 0
    generator: torch.Generator | None = field(default=None, repr=False)

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
    def is_finished(self) -> bool:
        return self.status.is_finished

    @property
    def pending_forks(self) -> int:
        """Sequences this request will fork into on its first token (n - 1 until then, 0 after and for n = 1)."""
        return self.sampling_params.n - 1 if self.parent_id is None and not self.output_token_ids else 0

    @property
    def num_seqs(self) -> int:
        """Sequences it counts as against max_num_seqs: itself and those it will fork (V0 counts a group's n)."""
        return 1 + self.pending_forks


def sequence_id(request_id: str, k: int) -> str:
    """The id of a request's k-th forked sequence (k >= 1; the request itself is sequence 0)."""
    return f"{request_id}#{k}"


@dataclass(frozen=True)
class RequestOutput:
    """A finished request, as returned by ``generate`` and in ``StepReport.finished``."""

    request_id: str
    prompt_token_ids: list[int]
    output_token_ids: list[int]
    text: str
    finish_reason: str | None
    num_preemptions: int
    status: str | None = None  # the final RequestStatus value ("finished_ignored" finishes with "length")
    message: str | None = None  # why it was ignored or aborted
    arrival_step: int = 0
    first_token_step: int | None = None
    finish_step: int | None = None
    ttft_s: float | None = None  # measured wall time from add_request to the first token
    latency_s: float | None = None  # measured wall time from add_request to finishing
    parent_id: str | None = None  # a forked sequence: the request it belongs to
    sequences: list[list[int]] | None = None  # generate() with n > 1: every sequence's tokens, this one first

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first (vLLM's TPOT)."""
        if self.ttft_s is None or self.latency_s is None or len(self.output_token_ids) < 2:
            return None
        return (self.latency_s - self.ttft_s) / (len(self.output_token_ids) - 1)
