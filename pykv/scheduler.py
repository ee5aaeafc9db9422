"""Continuous batching with a token budget, chunked prefill and preemption by recompute or swap
(vLLM V1's scheduling loop, with vLLM V0's swapped queue and preemption modes)."""

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
    """Decides, each step, which requests run and how many of their tokens.

    1. Running requests first, in queue order, each getting the tokens it still lacks (1 for a
       decode, the rest of its prompt for a chunked prefill), within ``max_num_batched_tokens``.
       A running request that cannot get a block preempts the *last* running request (possibly
       itself). Recompute: all its blocks are released, ``num_computed_tokens`` returns to 0 and
       it goes to the *front* of the waiting queue keeping every token id. Swap: its blocks move
       to the CPU pool and it joins the back of the swapped queue, keeping its progress.
    2. Only if nobody was preempted this step: swapped requests come back in order, while the
       device pool keeps ``swap_watermark`` of its blocks free (ignored when nothing runs).
    3. Only if nobody was preempted and nothing is left swapped: waiting requests are admitted in
       order while ``max_num_seqs``, the budget and the pool allow, reusing prefix-cache hits.
    """

    def __init__(self, config: EngineConfig, kv: KVCacheManager, max_model_len: int) -> None:
        self.config = config
        self.kv = kv
        self.max_model_len = max_model_len
        self.waiting: deque[Request] = deque()  # changed by Scheduler only
        self.running: list[Request] = []  # changed by Scheduler only
        self.swapped: deque[Request] = deque()  # changed by Scheduler only
        self.requests: dict[str, Request] = {}  # every unfinished request
        self.num_preemptions = 0
        self.watermark_blocks = int(config.swap_watermark * kv.pool.num_blocks)

    def add_request(self, request: Request) -> None:
        self.waiting.append(request)
        self.requests[request.request_id] = request

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running or self.swapped)

    def schedule(self, step: int) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self._schedule_running(out, step, self.config.max_num_batched_tokens)
        if out.preempted:
            return out  # vLLM swaps in and admits nothing in a step that preempted
        budget = self._schedule_swapped(out, budget)
        if not self.swapped:
            self._schedule_waiting(out, budget)
        return out

    def _schedule_running(self, out: SchedulerOutput, step: int, budget: int) -> int:
        i = 0
        while i < len(self.running) and budget > 0:
            request = self.running[i]
            num_new = min(request.num_tokens - request.num_computed_tokens, budget)
            while self.kv.allocate_slots(request, num_new) is None:
                victim = self.running.pop()
                out.preempted.append(self._preempt(victim, step, out))
                if victim is request:
                    return budget  # the request preempted itself: nobody after it is left
            out.chunks.append(self._chunk(request, num_new))
            budget -= num_new
            i += 1
        return budget

    def _schedule_swapped(self, out: SchedulerOutput, budget: int) -> int:
        while self.swapped and budget > 0 and len(self.running) < self.config.max_num_seqs:
            request = self.swapped[0]
            num_new = min(request.num_tokens - request.num_computed_tokens, budget)
            need = self.kv.num_blocks_to_swap_in(request, num_new)
            watermark = self.watermark_blocks if self.running else 0
            if self.kv.pool.num_free_blocks() - need < watermark:
                break
            self.swapped.popleft()
            out.swap_in[request.request_id] = self.kv.swap_in(request)
            new_blocks = self.kv.allocate_slots(request, num_new)
            assert new_blocks is not None, "swap-in room was checked above"
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            out.chunks.append(self._chunk(request, num_new))
            budget -= num_new
        return budget

    def _schedule_waiting(self, out: SchedulerOutput, budget: int) -> None:
        while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
            request = self.waiting[0]
            if not self.kv.can_fit(min(request.max_total_tokens, self.max_model_len)):
                self.waiting.popleft()
                out.ignored.append(self._ignore(request))
                continue
            hits = self.kv.get_computed_blocks(request)
            num_hit = len(hits) * self.kv.block_size
            num_new = request.num_tokens - num_hit
            if num_new > budget:
                if not self.config.enable_chunked_prefill:
                    break
                num_new = budget
            if self.kv.allocate_slots(request, num_new, hits) is None:
                break
            self.waiting.popleft()
            self.kv.record_admission(request, hits)
            request.status = RequestStatus.RUNNING
            request.num_computed_tokens = num_hit
            self.running.append(request)
            out.chunks.append(self._chunk(request, num_new, num_hit))
            budget -= num_new

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
        self.waiting.appendleft(victim)

    def _ignore(self, request: Request) -> Request:
        need = min(request.max_total_tokens, self.max_model_len)
        capacity = self.kv.pool.num_blocks * self.kv.block_size
        request.status = RequestStatus.FINISHED_IGNORED
        request.finish_message = (
            f"Input prompt ({request.num_prompt_tokens} tokens) plus max_tokens "
            f"({request.sampling_params.max_tokens}) needs {need} KV slots ({cdiv(need, self.kv.block_size)} blocks) "
            f"and exceeds the capacity of the KV cache ({self.kv.pool.num_blocks} blocks = {capacity} tokens). "
            "Raise num_gpu_blocks or lower max_tokens."
        )
        del self.requests[request.request_id]
        self.kv.forget(request)
        return request

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
            if request.first_token_step is None:
                request.first_token_step, request.first_token_time = step, now
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

    def _finish(self, request: Request, status: RequestStatus) -> None:
        request.status = status
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
