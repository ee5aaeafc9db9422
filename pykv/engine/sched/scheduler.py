"""Continuous batching with a token budget, chunked prefill and preemption by recompute: the parts every vLLM
profile shares. Each engine's scheduling order lives in its own module, V0's swapping with it."""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from typing import Collection, Sequence

from pykv.border.config import EngineConfig
from pykv.border.preemption_choices import VICTIM_POLICIES
from pykv.border.request import Request, RequestStatus, sequence_id
from pykv.border.step_report import AdmissionWait, ScheduledChunk, WaitRule
from pykv.engine.kv.block_copy import BlockCopy
from pykv.engine.kv.kv_cache_manager import KVCacheManager, cdiv
from pykv.engine.sched.request_queue import RequestQueue, create_request_queue
from pykv.engine.sched.victim_policy import VictimChoice, choose_victim

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
    fallback: str | None = None  # None | "recompute" | "abort"
    reason: str | None = None
    why: str | None = None  # why the victim policy chose this request


@dataclass(frozen=True)
class OutputEvents:
    """What vLLM V1 learns from requests' outputs, not from the scheduler: preemption events ride on a
    request's next output, and a prompt is counted once, when its first token comes."""

    delivered_preemptions: int = 0
    first_token_prompts: int = 0  # prompt tokens of requests that produced their first token
    # the same requests' prompt tokens computed at their first admission: less its prefix-cache hit and tier loads
    first_token_computed_prompts: int = 0


@dataclass
class SchedulerOutput:
    chunks: list[ScheduledChunk] = field(default_factory=list)
    preempted: list[PreemptionEvent] = field(default_factory=list)
    ignored: list[Request] = field(default_factory=list)
    aborted: list[Request] = field(default_factory=list)
    block_copies: list[BlockCopy] = field(default_factory=list)  # every device copy, in the order decided
    head_wait: AdmissionWait | None = None  # why the head of the waiting queue was not admitted (set by _waits)

    @property
    def num_scheduled_tokens(self) -> int:
        return sum(c.num_new_tokens for c in self.chunks)


class Scheduler:
    """Queues, preemption and bookkeeping shared by every vLLM profile; ``schedule()`` is the profile's
    (``pykv.engine.sched.scheduler_v0`` for vLLM V0, ``pykv.engine.sched.scheduler_v1`` for V1).

    Shared by all: a victim is chosen by ``preemption_victim`` (``pykv.engine.sched.victim_policy``; by default the
    *last* request of the running queue, possibly the request being scheduled itself). Recompute frees
    all its blocks, sets ``num_computed_tokens`` to 0 and puts it at the *front* of the waiting queue
    keeping every token id. Swap (V0 only: ``V0Scheduler._preempt_live``) moves its blocks to the
    CPU pool and appends it to the swapped queue, keeping its progress; the swapped queue is empty in V1.
    """

    def __init__(self, config: EngineConfig, kv: KVCacheManager, max_model_len: int) -> None:
        self.config = config
        self.profile = config.profile
        self.kv = kv
        self.max_model_len = max_model_len
        self.waiting = self._new_waiting_queue()  # changed by Scheduler only
        self.running: list[Request] = []  # changed by Scheduler only
        self.swapped: deque[Request] = deque()  # changed by V0Scheduler only (V1 never swaps)
        self.requests: dict[str, Request] = {}  # every unfinished request
        self.num_preemptions = 0
        self._events = OutputEvents()  # since the last take_output_events()
        # over every block, V1's null block included (0.33.0 v1/core/kv_cache_manager.py KVCacheManager.__init__)
        self.watermark_blocks = int(config.effective_watermark * kv.pool.num_blocks)

    def _new_waiting_queue(self) -> RequestQueue:
        """The waiting queue of the victim policy's --scheduling-policy (vLLM V1's ``create_request_queue``):
        ordered by (priority, arrival) under ``priority``, first come first served otherwise."""
        policy = VICTIM_POLICIES[self.config.preemption_victim].vllm_scheduling_policy
        return create_request_queue("priority" if policy == "priority" else "fcfs")

    def add_request(self, request: Request) -> None:
        self.waiting.add_request(request)
        self.requests[request.request_id] = request

    def _choose_victim(self, candidates: list[Request]) -> VictimChoice:
        return choose_victim(self.config.preemption_victim, candidates)

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running or self.swapped)

    def schedule(self, step: int) -> SchedulerOutput:
        raise NotImplementedError

    def _waits(self, out: SchedulerOutput, request: Request, rule: WaitRule, **numbers: int) -> None:
        """``request``, at the head of the waiting queue, is not admitted this step, by ``rule`` (with its numbers:
        ``AdmissionWait``'s fields). The first reason found is the one reported."""
        if out.head_wait is None:
            out.head_wait = AdmissionWait(request.request_id, rule, **numbers)

    def _chunk(self, request: Request, num_new: int, num_cached: int = 0, num_loaded: int = 0) -> ScheduledChunk:
        start = request.num_computed_tokens
        is_prefill = not (num_new == 1 and start == request.num_tokens - 1 and request.output_token_ids)
        return ScheduledChunk(request.request_id, start, num_new, is_prefill, num_cached, num_loaded)

    # ---- preemption ---------------------------------------------------------------------------

    def _allocate(
        self, out: SchedulerOutput, request: Request, num_new_tokens: int, hits: Sequence[int] = (), **kwargs: int
    ) -> list[int] | None:
        """``KVCacheManager.allocate_slots``, listing the copy on write it decided on this step's copies; the new
        block ids, or None (nothing changed) when the pool lacks room."""
        allocation = self.kv.allocate_slots(request, num_new_tokens, hits, **kwargs)
        if allocation is None:
            return None
        out.block_copies += allocation.copies
        return allocation.new_blocks

    def _preempt(self, victim: Request, step: int, out: SchedulerOutput, why: str | None = None) -> PreemptionEvent:
        return self._preempt_group([victim], step, out, why)[0]

    def _preempt_group(
        self, group: list[Request], step: int, out: SchedulerOutput, why: str | None = None
    ) -> list[PreemptionEvent]:
        """Preempt ``group``: one request, or (V0) the running sequences of one request, preempted whole. Each is
        counted; one preempted too often without progress is aborted (pykv's livelock guard); the others go the
        way ``_preempt_live`` decides."""
        events, live = [], []
        for victim in group:
            member_why = (
                why
                if len(group) == 1
                else (f"its sequence group goes whole (vLLM V0 preempts a SequenceGroup), and for the chosen one {why}")
            )
            self.num_preemptions += 1
            victim.num_preemptions += 1
            stalled = victim.tokens_since_preemption == 0
            victim.preemptions_without_progress = victim.preemptions_without_progress + 1 if stalled else 1
            victim.tokens_since_preemption = 0
            event = PreemptionEvent(
                request_id=victim.request_id,
                mode="recompute",
                step=step,
                num_blocks=self.kv.num_blocks_of(victim),
                num_tokens=victim.num_computed_tokens,
                why=member_why,
            )  # the mode and its reasons are set below, once decided
            if victim.preemptions_without_progress > self.config.max_preemptions_without_progress:
                victim.finish_message = LIVELOCK_MESSAGE.format(n=victim.preemptions_without_progress)
                self._finish(victim, RequestStatus.FINISHED_ABORTED)
                out.aborted.append(victim)
                events.append(dataclasses.replace(event, mode="abort", reason="livelock guard"))
                continue
            victim.undelivered_preemptions += 1  # an abort takes it back: vLLM never counted those
            live.append((victim, event))
        return events + self._preempt_live(live, out)

    def _preempt_live(self, live: list[tuple[Request, PreemptionEvent]], out: SchedulerOutput) -> list[PreemptionEvent]:
        """The victims left after the livelock guard, each with its event (mode "recompute" so far): recompute
        them, V1's only mode (V0 may swap: ``V0Scheduler._preempt_live``)."""
        for victim, _ in live:
            self._preempt_by_recompute(victim)
        return [event for _, event in live]

    def _preempt_by_recompute(self, victim: Request) -> None:
        self.kv.free(victim)
        victim.status = RequestStatus.PREEMPTED
        victim.num_computed_tokens = 0
        self._requeue(victim)

    def _requeue(self, victim: Request) -> None:
        """A recompute victim goes back to the front of the waiting queue (V1's prepend_request; under the
        priority policy, to its (priority, arrival) place)."""
        self.waiting.prepend_request(victim)

    # ---- after the forward pass ---------------------------------------------------------------

    def update_from_output(
        self,
        out: SchedulerOutput,
        sampled: dict[str, int],
        step: int,
        now: float,
        forks: dict[str, list[int]] | None = None,
    ) -> list[Request]:
        """Advance each scheduled request; append sampled tokens (the first one stamped with ``step`` and
        ``now``, a perf_counter() time); fork the sequences of parallel sampling (``forks``: request -> the
        first tokens of its other sequences); return the requests that finished."""
        finished = []
        for chunk in out.chunks:
            request = self.requests[chunk.request_id]
            request.num_computed_tokens = chunk.start + chunk.num_new_tokens
            token = sampled.get(chunk.request_id)
            if token is None:
                continue  # a prefill chunk that has not reached the end of the known tokens
            children = self._fork(request, (forks or {}).get(request.request_id, []), step, now)
            request.output_token_ids.append(token)
            for child in children:
                if (status := self._stop_status(child, child.output_token_ids[-1])) is not None:
                    self._finish(child, status)
                    finished.append(child)
            request.tokens_since_preemption += 1
            self._deliver_preemptions(request)
            if request.first_token_step is None:
                request.first_token_step, request.first_token_time = step, now
                e = self._events
                computed = request.num_prompt_tokens - request.first_admission_cached_tokens
                self._events = dataclasses.replace(
                    e,
                    first_token_prompts=e.first_token_prompts + request.num_prompt_tokens,
                    first_token_computed_prompts=e.first_token_computed_prompts + computed,
                )
            status = self._stop_status(request, token)
            if status is not None:
                self._finish(request, status)
                finished.append(request)
        return finished

    def _fork(self, parent: Request, tokens: list[int], step: int, now: float) -> list[Request]:
        """Parallel sampling: on its first token a request with ``n > 1`` forks ``n - 1`` sequences that share all
        its blocks (vLLM V0's ``SequenceGroup`` fork); they join the running queue right after it."""
        children = []
        for k, token in enumerate(tokens, start=1):
            child = dataclasses.replace(
                parent,
                request_id=sequence_id(parent.request_id, k),
                prompt_token_ids=list(parent.prompt_token_ids),
                output_token_ids=[token],
                parent_id=parent.request_id,
                fork_generators=[],
                generator=parent.fork_generators[k - 1] if parent.fork_generators else None,
                first_token_step=step,
                first_token_time=now,
                num_preemptions=0,
                undelivered_preemptions=0,
                tokens_since_preemption=1,
                preemptions_without_progress=0,
            )
            self.kv.fork(parent, child)
            self.requests[child.request_id] = child
            children.append(child)
        if children:
            at = self.running.index(parent) + 1
            self.running[at:at] = children
        return children

    def num_queued(self, queue: Collection[Request]) -> int:
        """A queue's length as the release's gauges and stats line count it: V0 counts sequence groups (a request's
        forked sequences with it, once), V1 requests (``VllmProfile.queues_count_groups``)."""
        if not self.profile.queues_count_groups:
            return len(queue)
        return len({r.parent_id or r.request_id for r in queue})

    def num_running_seqs(self) -> int:
        """Running sequences as max_num_seqs counts them: a request yet to fork counts its n (as V0 counts a
        group's sequences at admission)."""
        return sum(r.num_seqs for r in self.running)

    def _stop_status(self, request: Request, token: int) -> RequestStatus | None:
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
        self._events = dataclasses.replace(
            e, delivered_preemptions=e.delivered_preemptions + request.undelivered_preemptions
        )
        request.undelivered_preemptions = 0

    def take_output_events(self) -> OutputEvents:
        """What requests' outputs reported since the last call (V1's view); resets it."""
        events, self._events = self._events, OutputEvents()
        return events

    def _finish(self, request: Request, status: RequestStatus) -> None:
        request.status = status
        self._deliver_preemptions(request)
        for queue in (self.running, self.swapped):
            if request in queue:
                queue.remove(request)
        if request in self.waiting:
            self.waiting.remove_request(request)
        self.kv.free(request)
        self.kv.forget(request)
        del self.requests[request.request_id]

    def abort(self, request_id: str, message: str = "Aborted by the user.") -> Request | None:
        request = self.requests.get(request_id)
        if request is None:
            return None
        request.finish_message = message
        self._finish(request, RequestStatus.FINISHED_ABORTED)
        return request

    def check_invariants(self) -> None:
        self.kv.check_invariants()
        assert self.num_running_seqs() <= self.config.max_num_seqs, "more running sequences than max_num_seqs"
        for request in self.running:
            assert request.status == RequestStatus.RUNNING, f"{request.request_id} in running with {request.status}"
            assert request.num_computed_tokens <= request.num_tokens
            assert self.kv.num_blocks_of(request) >= cdiv(request.num_computed_tokens, self.kv.block_size)
        for request in self.waiting:
            assert request.status in (RequestStatus.WAITING, RequestStatus.PREEMPTED)
            # but 0.10.2's victim of an orphaned chunk, counted as computed though its blocks are gone
            assert request.num_computed_tokens == 0 or not self.profile.victim_chunk_taken_back, (
                f"waiting {request.request_id} has computed tokens"
            )
            assert self.kv.num_blocks_of(request) == 0, f"waiting {request.request_id} holds blocks"
        queued = [r.request_id for q in (self.running, self.waiting, self.swapped) for r in q]
        assert len(queued) == len(set(queued)) == len(self.requests), "a request is in two queues or none"
