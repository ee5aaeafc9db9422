"""Continuous batching with a token budget, chunked prefill and preemption by recompute or swap: the
parts every vLLM profile shares. Each profile's scheduling order lives in its own module."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from pykv.config import EngineConfig
from pykv.kv_cache_manager import KVCacheManager, cdiv
from pykv.request import Request, RequestStatus
from pykv.step_report import ScheduledChunk

SWAP_ABORT_MESSAGE = (
    "Aborted due to the lack of CPU swap space. Please increase the swap space to avoid this error. "
    "(vLLM V0 stopped the whole engine here; pykv aborts only this request.)"
)

LIVELOCK_MESSAGE = (
    "Aborted: preempted {n} times in a row without producing a token (a preemption livelock). The running "
    "requests do not fit the KV pool together: raise num_gpu_blocks or lower max_num_seqs."
)


@dataclass(frozen=True)
class PreemptionEvent:
    """What the scheduler did to a victim. ``mode`` is what took effect: "recompute", "swap", or
    "abort" (only with ``swap_fallback="abort"``); ``fallback`` is set when a swap was wanted but
    the CPU pool lacked room."""

    request_id: str
    mode: str
    step: int
    num_blocks: int  # device blocks the victim held
    num_tokens: int  # computed tokens whose KV was dropped (recompute) or moved (swap)
    fallback: Optional[str] = None  # None | "recompute" | "abort"
    reason: Optional[str] = None


@dataclass(frozen=True)
class OutputEvents:
    """What vLLM V1 learns from requests' outputs, not from the scheduler: preemption events ride on a
    request's next output, and a prompt is counted once, when its first token comes."""

    delivered_preemptions: int = 0
    first_token_prompts: int = 0  # prompt tokens of requests that produced their first token


@dataclass
class SchedulerOutput:
    chunks: list[ScheduledChunk] = field(default_factory=list)
    preempted: list[PreemptionEvent] = field(default_factory=list)
    ignored: list[Request] = field(default_factory=list)
    aborted: list[Request] = field(default_factory=list)
    swap_out: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # request -> [(gpu, cpu)]
    swap_in: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # request -> [(cpu, gpu)]

    @property
    def num_scheduled_tokens(self) -> int:
        return sum(c.num_new_tokens for c in self.chunks)


class Scheduler:
    """Queues, preemption and bookkeeping shared by every vLLM profile; ``schedule()`` is the profile's
    (``pykv.scheduler_v0`` for vLLM V0, ``pykv.scheduler_v1`` for V1).

    Shared by all: a victim is the *last* request of the running queue (possibly the request being
    scheduled itself). Recompute frees all its blocks, sets ``num_computed_tokens`` to 0 and puts it
    at the *front* of the waiting queue keeping every token id. Swap (V0 only) moves its blocks to the
    CPU pool and appends it to the swapped queue, keeping its progress.
    """

    def __init__(self, config: EngineConfig, kv: KVCacheManager, max_model_len: int) -> None:
        self.config = config
        self.profile = config.profile
        self.kv = kv
        self.max_model_len = max_model_len
        self.waiting: deque[Request] = deque()  # changed by Scheduler only
        self.running: list[Request] = []  # changed by Scheduler only
        self.swapped: deque[Request] = deque()  # changed by Scheduler only
        self.requests: dict[str, Request] = {}  # every unfinished request
        self.num_preemptions = 0
        self._events = OutputEvents()  # since the last take_output_events()
        self.watermark_blocks = int(config.effective_watermark * kv.pool.num_blocks)

    def add_request(self, request: Request) -> None:
        self.waiting.append(request)
        self.requests[request.request_id] = request

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running or self.swapped)

    def schedule(self, step: int) -> SchedulerOutput:
        raise NotImplementedError

    def _chunk(self, request: Request, num_new: int, num_cached: int = 0) -> ScheduledChunk:
        start = request.num_computed_tokens
        is_prefill = not (num_new == 1 and start == request.num_tokens - 1 and request.output_token_ids)
        return ScheduledChunk(request.request_id, start, num_new, is_prefill, num_cached)

    # ---- preemption ---------------------------------------------------------------------------

    def _preempt(self, victim: Request, step: int, out: SchedulerOutput) -> PreemptionEvent:
        """vLLM V0's modes: "swap" swaps (falling back when the CPU pool is full); "auto" swaps only
        requests with several sequences, and until parallel sampling exists every request has one,
        so "auto" recomputes; "recompute" always recomputes (vLLM V1's only mode)."""
        self.num_preemptions += 1
        victim.num_preemptions += 1
        stalled = victim.tokens_since_preemption == 0
        victim.preemptions_without_progress = victim.preemptions_without_progress + 1 if stalled else 1
        victim.tokens_since_preemption = 0
        num_blocks, num_tokens = self.kv.num_blocks_of(victim), victim.num_computed_tokens
        event = dict(request_id=victim.request_id, step=step, num_blocks=num_blocks, num_tokens=num_tokens)
        if victim.preemptions_without_progress > self.config.max_preemptions_without_progress:
            victim.finish_message = LIVELOCK_MESSAGE.format(n=victim.preemptions_without_progress)
            self._finish(victim, RequestStatus.FINISHED_ABORTED)
            out.aborted.append(victim)
            return PreemptionEvent(mode="abort", reason="livelock guard", **event)
        victim.undelivered_preemptions += 1  # an abort below takes it back: vLLM never counted those
        if self.config.preemption_mode != "swap":
            self._preempt_by_recompute(victim)
            return PreemptionEvent(mode="recompute", **event)
        mapping = self.kv.swap_out(victim)
        if mapping is not None:
            out.swap_out[victim.request_id] = mapping
            victim.status = RequestStatus.SWAPPED
            self.swapped.append(victim)
            return PreemptionEvent(mode="swap", **event)
        reason = (f"CPU swap pool has {self.kv.cpu_pool.num_free_blocks()} free blocks of "
                  f"{self.kv.cpu_pool.num_blocks}; the victim needs {num_blocks}")
        if self.config.swap_fallback == "abort":
            victim.undelivered_preemptions -= 1
            victim.finish_message = SWAP_ABORT_MESSAGE
            self._finish(victim, RequestStatus.FINISHED_ABORTED)
            out.aborted.append(victim)
            return PreemptionEvent(mode="abort", fallback="abort", reason=reason, **event)
        self._preempt_by_recompute(victim)
        return PreemptionEvent(mode="recompute", fallback="recompute", reason=reason, **event)

    def _preempt_by_recompute(self, victim: Request) -> None:
        self.kv.free(victim)
        victim.status = RequestStatus.PREEMPTED
        victim.num_computed_tokens = 0
        self._requeue(victim)

    def _requeue(self, victim: Request) -> None:
        """A recompute victim goes back to the front of the waiting queue (V1's prepend_request)."""
        self.waiting.appendleft(victim)

    # ---- after the forward pass ---------------------------------------------------------------

    def update_from_output(self, out: SchedulerOutput, sampled: dict[str, int], step: int, now: float) -> list[Request]:
        """Advance each scheduled request; append sampled tokens (the first one stamped with ``step`` and
        ``now``, a perf_counter() time); return the requests that finished."""
        finished = []
        for chunk in out.chunks:
            request = self.requests[chunk.request_id]
            request.num_computed_tokens = chunk.start + chunk.num_new_tokens
            token = sampled.get(chunk.request_id)
            if token is None:
                continue  # a prefill chunk that has not reached the end of the known tokens
            request.output_token_ids.append(token)
            request.tokens_since_preemption += 1
            self._deliver_preemptions(request)
            if request.first_token_step is None:
                request.first_token_step, request.first_token_time = step, now
                e = self._events
                self._events = OutputEvents(e.delivered_preemptions, e.first_token_prompts + request.num_prompt_tokens)
            status = self._stop_status(request, token)
            if status is not None:
                self._finish(request, status)
                finished.append(request)
        return finished

    def _stop_status(self, request: Request, token: int) -> Optional[RequestStatus]:
        params = request.sampling_params
        if token in params.stop_token_ids or (not params.ignore_eos and token in request.eos_token_ids):
            return RequestStatus.FINISHED_STOPPED
        if len(request.output_token_ids) >= params.max_tokens or request.num_tokens >= self.max_model_len:
            return RequestStatus.FINISHED_LENGTH
        return None

    def _deliver_preemptions(self, request: Request) -> None:
        """vLLM V1 reports a preemption as an event on the request's next output (a token, or its end), so
        its vllm:num_preemptions lags the preemption itself."""
        e = self._events
        self._events = OutputEvents(e.delivered_preemptions + request.undelivered_preemptions, e.first_token_prompts)
        request.undelivered_preemptions = 0

    def take_output_events(self) -> OutputEvents:
        """What requests' outputs reported since the last call (V1's view); resets it."""
        events, self._events = self._events, OutputEvents()
        return events

    def _finish(self, request: Request, status: RequestStatus) -> None:
        request.status = status
        self._deliver_preemptions(request)
        for queue in (self.running, self.waiting, self.swapped):
            if request in queue:
                queue.remove(request)
        self.kv.free(request)
        self.kv.free_swapped(request)
        self.kv.forget(request)
        del self.requests[request.request_id]

    def abort(self, request_id: str, message: str = "Aborted by the user.") -> Optional[Request]:
        request = self.requests.get(request_id)
        if request is None:
            return None
        request.finish_message = message
        self._finish(request, RequestStatus.FINISHED_ABORTED)
        return request

    def check_invariants(self) -> None:
        self.kv.check_invariants()
        assert len(self.running) <= self.config.max_num_seqs, "more running requests than max_num_seqs"
        for request in self.running:
            assert request.status == RequestStatus.RUNNING, f"{request.request_id} in running with {request.status}"
            assert request.num_computed_tokens <= request.num_tokens
            assert self.kv.num_blocks_of(request) >= cdiv(request.num_computed_tokens, self.kv.block_size)
        for request in self.waiting:
            assert request.status in (RequestStatus.WAITING, RequestStatus.PREEMPTED)
            assert request.num_computed_tokens == 0, f"waiting {request.request_id} has computed tokens"
            assert self.kv.num_blocks_of(request) == 0, f"waiting {request.request_id} holds blocks"
        for request in self.swapped:
            assert request.status == RequestStatus.SWAPPED
            assert self.kv.num_blocks_of(request) == 0, f"swapped {request.request_id} holds device blocks"
            cpu_blocks = len(self.kv.cpu_block_tables[request.request_id])
            assert cpu_blocks == cdiv(request.num_computed_tokens, self.kv.block_size), "swapped KV lost or padded"
        queued = [r.request_id for q in (self.running, self.waiting, self.swapped) for r in q]
        assert len(queued) == len(set(queued)) == len(self.requests), "a request is in two queues or none"

