"""Continuous batching with a token budget, chunked prefill and recompute preemption (vLLM V1's
scheduler loop, with vLLM's victim and re-entry rules)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from pykv.config import EngineConfig
from pykv.kv_cache_manager import KVCacheManager, cdiv
from pykv.request import Request, RequestStatus


@dataclass(frozen=True)
class ScheduledChunk:
    """``num_new_tokens`` tokens of one request run this step, starting at ``start``."""

    request_id: str
    start: int  # first token position computed this step (= num_computed_tokens before the step)
    num_new_tokens: int
    is_prefill: bool  # False for a single-token decode
    num_cached_tokens: int = 0  # prefix-cache hit taken at admission this step


@dataclass(frozen=True)
class PreemptionEvent:
    request_id: str
    mode: str  # "recompute"
    step: int
    num_blocks_freed: int
    num_tokens_dropped: int  # computed tokens whose KV was thrown away and must be recomputed


@dataclass
class SchedulerOutput:
    chunks: list[ScheduledChunk] = field(default_factory=list)
    preempted: list[PreemptionEvent] = field(default_factory=list)
    ignored: list[Request] = field(default_factory=list)

    @property
    def num_scheduled_tokens(self) -> int:
        return sum(c.num_new_tokens for c in self.chunks)


class Scheduler:
    """Decides, each step, which requests run and how many of their tokens.

    1. Running requests first, in queue order, each getting the tokens it still lacks (1 for a
       decode, the rest of its prompt for a chunked prefill), within ``max_num_batched_tokens``.
       A running request that cannot get a block preempts the *last* running request (possibly
       itself) by recompute: all its blocks are released, ``num_computed_tokens`` returns to 0, and
       it goes to the *front* of the waiting queue keeping every token id.
    2. Then, only if nobody was preempted this step, waiting requests are admitted in order while
       ``max_num_seqs``, the budget and the pool allow, reusing prefix-cache hits.
    """

    def __init__(self, config: EngineConfig, kv: KVCacheManager, max_model_len: int) -> None:
        self.config = config
        self.kv = kv
        self.max_model_len = max_model_len
        self.waiting: deque[Request] = deque()  # changed by Scheduler only
        self.running: list[Request] = []  # changed by Scheduler only
        self.requests: dict[str, Request] = {}  # every unfinished request
        self.num_preemptions = 0

    def add_request(self, request: Request) -> None:
        self.waiting.append(request)
        self.requests[request.request_id] = request

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self, step: int) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self.config.max_num_batched_tokens
        i = 0
        while i < len(self.running) and budget > 0:
            request = self.running[i]
            num_new = min(request.num_tokens - request.num_computed_tokens, budget)
            while self.kv.allocate_slots(request, num_new) is None:
                victim = self.running.pop()
                out.preempted.append(self._preempt(victim, step))
                if victim is request:
                    break
            else:
                out.chunks.append(self._chunk(request, num_new))
                budget -= num_new
                i += 1
                continue
            break  # the request preempted itself: nobody after it is left in running
        if out.preempted:
            return out  # vLLM admits no new request in a step that preempted
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
            self.kv.record_admission(request, num_hit)
            request.status = RequestStatus.RUNNING
            request.num_computed_tokens = num_hit
            self.running.append(request)
            out.chunks.append(self._chunk(request, num_new, num_hit))
            budget -= num_new
        return out

    def _chunk(self, request: Request, num_new: int, num_cached: int = 0) -> ScheduledChunk:
        start = request.num_computed_tokens
        is_prefill = not (num_new == 1 and start == request.num_tokens - 1 and request.output_token_ids)
        return ScheduledChunk(request.request_id, start, num_new, is_prefill, num_cached)

    def _preempt(self, victim: Request, step: int) -> PreemptionEvent:
        num_blocks = self.kv.num_blocks_of(victim)
        event = PreemptionEvent(victim.request_id, "recompute", step, num_blocks, victim.num_computed_tokens)
        self.kv.free(victim)
        victim.status = RequestStatus.PREEMPTED
        victim.num_computed_tokens = 0
        victim.num_preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(victim)
        return event

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

    def update_from_output(self, out: SchedulerOutput, sampled: dict[str, int], step: int) -> list[Request]:
        """Advance each scheduled request; append sampled tokens; return the requests that finished."""
        finished = []
        for chunk in out.chunks:
            request = self.requests[chunk.request_id]
            request.num_computed_tokens = chunk.start + chunk.num_new_tokens
            token = sampled.get(chunk.request_id)
            if token is None:
                continue  # a prefill chunk that has not reached the end of the known tokens
            request.output_token_ids.append(token)
            if request.first_token_step is None:
                request.first_token_step = step
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
        if request in self.running:
            self.running.remove(request)
        else:
            self.waiting.remove(request)
        self.kv.free(request)
        self.kv.forget(request)
        del self.requests[request.request_id]

    def abort(self, request_id: str) -> Optional[Request]:
        request = self.requests.get(request_id)
        if request is None:
            return None
        request.finish_message = "Aborted by the user."
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
        ids = [r.request_id for r in self.running] + [r.request_id for r in self.waiting]
        assert len(ids) == len(set(ids)) == len(self.requests), "a request is in two queues or none"
