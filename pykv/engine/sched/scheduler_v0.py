"""vLLM V0's scheduling step (profile "v0.6"), transcribed from vLLM 0.6.3.post1's
``vllm/core/scheduler.py`` (``Scheduler._schedule_default``, ``_schedule_chunked_prefill``,
``_schedule_running``, ``_schedule_swapped``, ``_schedule_prefills``) and the admission checks of
``vllm/core/block_manager.py`` (``SelfAttnBlockSpaceManager.can_allocate``, ``_can_swap``)."""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field

from pykv.border.request import Request, RequestStatus
from pykv.engine.kv.kv_cache_manager import cdiv
from pykv.engine.sched.request_queue import FCFSRequestQueue, RequestQueue
from pykv.engine.sched.scheduler import PreemptionEvent, Scheduler, SchedulerOutput
from pykv.engine.sched.victim_policy import VictimChoice, choose_victim

PROMPT_OVER_CAPACITY = (
    "Input prompt ({n} tokens) + lookahead slots (0) is too long and exceeds the capacity of block_manager"
)
SWAP_IN_NEVER = "Failing the request {id} because there's not enough kv cache blocks to run the entire sequence."
SWAP_ABORT_MESSAGE = (
    "Aborted due to the lack of CPU swap space. Please increase the swap space to avoid this error. "
    "(vLLM V0 stopped the whole engine here; pykv aborts only this request.)"
)


@dataclass
class _Budget:
    """V0's SchedulingBudget: tokens and sequences scheduled this step."""

    token_budget: int
    max_num_seqs: int
    num_batched_tokens: int = 0
    num_seqs: int = 0

    def remaining(self) -> int:
        return self.token_budget - self.num_batched_tokens

    def can_schedule(self, num_tokens: int, num_seqs: int = 1) -> bool:
        return (
            self.num_batched_tokens + num_tokens <= self.token_budget and self.num_seqs + num_seqs <= self.max_num_seqs
        )

    def add(self, num_tokens: int, num_seqs: int) -> None:
        self.num_batched_tokens += num_tokens
        self.num_seqs += num_seqs


@dataclass
class _Scheduled:
    decodes: list[Request] = field(default_factory=list)
    prefills: list[Request] = field(default_factory=list)
    leftover: list[Request] = field(default_factory=list)  # running requests the scan did not reach


class V0Scheduler(Scheduler):
    """Chunked prefill off (``_schedule_default``): waiting prefills first, whole prompts only, and
    only while nothing is swapped; decodes run only in a step that admitted no prefill; swap-in only
    after decodes that preempted nobody. A step is all-prefill or all-decode.

    Chunked prefill on (``_schedule_chunked_prefill``): running (decodes and unfinished prefills) ->
    swapped (only if nobody was preempted) -> waiting prefills, which are admitted even in a step that
    preempted and while requests are swapped. The running queue is rebuilt in V0's order: swapped-in,
    then decodes, then unfinished prefills, then new prefills.

    Admission reserves blocks for the whole sequence at once and keeps the 1% watermark free
    (``can_allocate``); a request that could never fit (more blocks than the pool minus the watermark)
    is ignored (finish reason "length"). Recompute victims
    return to the front of the waiting queue after the step, so they are not re-admitted in it.

    Swapping is V0's alone and lives here: a victim swapped out (``_preempt_live``), the swapped queue brought back
    (``_schedule_swapped``), and its invariants.
    """

    def schedule(self, step: int) -> SchedulerOutput:
        out = SchedulerOutput()
        self._recomputed: list[Request] = []
        budget = _Budget(self.config.max_num_batched_tokens, self.config.max_num_seqs)
        chunking = self.config.enable_chunked_prefill
        if chunking:
            running = self._schedule_running(out, step, budget, chunking)
            swapped_in = _Scheduled() if out.preempted else self._schedule_swapped(out, budget, running)
            admitted = self._schedule_prefills(out, budget, chunking)
            self.running = (
                running.leftover
                + swapped_in.decodes
                + swapped_in.prefills
                + running.decodes
                + running.prefills
                + admitted
            )
            # 0.6.3.post1 _schedule_chunked_prefill: the batch lists prefills first, then decodes
            _order_batch(out, admitted + running.prefills + swapped_in.prefills + running.decodes + swapped_in.decodes)
        else:
            budget.num_seqs = self.num_running_seqs()
            admitted = [] if self.swapped else self._schedule_prefills(out, budget, chunking)
            if self.swapped and self.waiting:
                self._waits(out, self.waiting.peek_request(), "swapped_first")
            if admitted:
                self.running += admitted
            else:
                if self._priority:
                    self._schedule_priority_preemption(out, step, budget)
                running = self._schedule_running(out, step, budget, chunking)
                swapped_in = _Scheduled() if out.preempted else self._schedule_swapped(out, budget, running)
                self.running = running.leftover + running.decodes + swapped_in.decodes
        self.waiting.prepend_requests(self._recomputed)  # V0's waiting.extendleft(preempted), after the step
        return out

    @property
    def _priority(self) -> bool:
        """0.6.3.post1 reads the scheduling policy only without chunked prefill (``Scheduler._schedule_default``
        calls ``_schedule_priority_preemption``; ``_schedule_chunked_prefill`` is first come, first served)."""
        return self.config.preemption_victim == "priority" and not self.config.enable_chunked_prefill

    def _new_waiting_queue(self) -> RequestQueue:
        """V0 keeps a deque under every policy (0.6.3.post1 ``Scheduler.__init__``); only
        ``_schedule_priority_preemption`` sorts it."""
        return FCFSRequestQueue()

    def _choose_victim(self, candidates: list[Request]) -> VictimChoice:
        if self.config.preemption_victim == "priority" and not self._priority:
            return choose_victim("last", candidates)  # chunked prefill: 0.6.3 ignores the priority policy
        return super()._choose_victim(candidates)

    def _schedule_priority_preemption(self, out: SchedulerOutput, step: int, budget: _Budget) -> None:
        """0.6.3.post1 ``Scheduler._schedule_priority_preemption`` (priority policy, a step without prefills): sort
        the running queue by (priority, arrival); while its tail ranks below the head of the waiting queue and that
        head cannot be admitted, preempt the tail; then sort the waiting queue too."""
        key = _priority_key
        self.running.sort(key=key)
        if self.waiting:
            head = self.waiting.peek_request()
            while self.running and key(self.running[-1]) > key(head):
                required = cdiv(head.num_tokens, self.kv.block_size)
                if self.kv.pool.num_free_blocks() - required >= self.watermark_blocks and budget.can_schedule(
                    head.num_tokens, head.num_seqs
                ):
                    break
                group = group_of(self.running[-1], self.running)
                for member in group:
                    self.running.remove(member)
                budget.num_seqs -= sum(r.num_seqs for r in group)
                why = "it ranks below the waiting request (priority preemption)"
                out.preempted.extend(self._preempt_group(group[::-1], step, out, why))
                # the victim goes before the waiting queue's head at once, not after the step (it is sorted below)
                self.waiting.prepend_requests(self._recomputed)
                self._recomputed = []
        self.waiting = FCFSRequestQueue(sorted(self.waiting, key=key))

    def _num_new_tokens(self, request: Request, budget: _Budget, chunking: bool) -> int:
        """V0's _get_num_new_tokens: what the request lacks, cut to the budget when chunking (to whole
        blocks with prefix caching)."""
        num_new = request.num_tokens - request.num_computed_tokens
        remaining = budget.remaining()
        if chunking and remaining < num_new:
            num_new = (
                remaining // self.kv.block_size * self.kv.block_size if self.config.enable_prefix_caching else remaining
            )
        return num_new

    def _schedule_running(self, out: SchedulerOutput, step: int, budget: _Budget, chunking: bool) -> _Scheduled:
        queue, self.running = deque(self.running), []
        order = {id(r): i for i, r in enumerate(queue)}  # running-queue order, to preempt a group tail first
        done = _Scheduled()
        while queue:
            request = queue[0]
            num_new = self._num_new_tokens(request, budget, chunking)
            if num_new == 0:
                break
            queue.popleft()
            while not self._can_append_slots(request, queue):
                # V0 pops victims off the rest of the queue, else takes the request itself: candidates are the
                # requests not yet scheduled this step ("last" = the tail of the rest). The victim's whole sequence
                # group goes (parallel sampling), sequences scheduled earlier this step taken back.
                choice = self._choose_victim([request] + list(queue))
                group = group_of(choice.request, [request] + list(queue) + done.decodes + done.prefills)
                group.sort(key=lambda r: -order[id(r)])  # tail first, as V0 pops them
                for member in group:
                    if member in queue:
                        queue.remove(member)
                    self._take_back(member, out, budget, done, chunking)
                out.preempted.extend(self._preempt_group(group, step, out, choice.why))
                if request in group:
                    break
            else:
                assert self._allocate(out, request, num_new) is not None, "can_append_slots checked the worst case"
                chunk = self._chunk(request, num_new)
                out.chunks.append(chunk)
                (done.prefills if chunk.is_prefill else done.decodes).append(request)
                budget.add(num_new, request.num_seqs if chunking else 0)  # unchunked: running seqs counted up front
        done.leftover = list(queue)
        return done

    def _can_append_slots(self, request: Request, queue: deque[Request]) -> bool:
        """0.6.3.post1 ``SelfAttnBlockSpaceManager.can_append_slots``, a worst case: every block the group's running
        sequences touch (``_num_touched``) must be free, as if each needed a new block or a copy on write."""
        group = group_of(request, [request] + list(queue))  # members scheduled earlier this step were checked
        return sum(self._num_touched(r) for r in group) <= self.kv.pool.num_free_blocks()

    @staticmethod
    def _is_decode(request: Request) -> bool:
        """V0's decode stage: the last token was sampled after the last step (not mid-prefill or re-prefill)."""
        return request.tokens_since_preemption > 0 and request.num_computed_tokens == request.num_tokens - 1

    def _num_touched(self, request: Request) -> int:
        """0.6.3.post1 ``BlockTable.get_num_blocks_touched_by_append_slots``: the blocks that appending the tokens
        V0's block table has not seen touches, counting the partly filled last block even with nothing to append.

        V0's table holds every token known at admission (the whole prompt, or a re-prefill's whole sequence) and
        after each scheduled step; only a decode's last token, sampled since, is unseen::

            block_size 4, seen 6:  [x x x x][x x . .]   decode (1 unseen) -> 1; prefill chunk (0 unseen) -> 1
            block_size 4, seen 8:  [x x x x][x x x x]   decode (1 unseen) -> 1 (a new block); prefill chunk -> 0
        """
        unseen = 1 if self._is_decode(request) else 0
        bs = self.kv.block_size
        room = bs - (request.num_tokens - unseen) % bs  # free slots in the last block (a full one: a whole block)
        return 1 - (room - unseen) // bs  # 1 + ceil((unseen - room) / bs)

    def _num_touched_by_swap_in(self, request: Request) -> int:
        """0.6.3.post1 ``SelfAttnBlockSpaceManager._can_swap``: the full blocks of the sequence's table plus those its
        append touches. Shared blocks count once per sequence (its set holds each table's own block objects)."""
        unseen = 1 if self._is_decode(request) else 0
        return (request.num_tokens - unseen) // self.kv.block_size + self._num_touched(request)

    def _take_back(
        self, request: Request, out: SchedulerOutput, budget: _Budget, done: _Scheduled, chunking: bool
    ) -> None:
        """Undo a sequence's scheduling earlier in this step (its group is being preempted): its chunk, its budget,
        the block it was given for this step's token."""
        chunk = next((c for c in out.chunks if c.request_id == request.request_id), None)
        if chunk is None:
            return
        out.chunks.remove(chunk)
        for queue in (done.decodes, done.prefills):
            if request in queue:
                queue.remove(request)
        budget.num_batched_tokens -= chunk.num_new_tokens
        budget.num_seqs -= request.num_seqs if chunking else 0
        self.kv.trim(request)

    def _schedule_swapped(self, out: SchedulerOutput, budget: _Budget, running: _Scheduled) -> _Scheduled:
        """Swapped requests come back first in, first out, a sequence group together (its shared blocks shared
        again), while the blocks they touch plus the watermark fit, and each with every token it lacks: 0.6.3.post1
        never chunks a swap-in (``_schedule_chunked_prefill`` calls ``_schedule_swapped`` without
        ``enable_chunking``), so one caught mid-prefill waits until its whole rest fits the budget left."""
        done = _Scheduled()
        while self.swapped:
            group = group_of(self.swapped[0], list(self.swapped))
            # pykv: when nothing runs, the watermark is waived and a swap-in is chunked, so that a lone swapped request
            # can return (V0 would wait for room that never comes, or, swapped mid-prefill with more tokens left than
            # max_num_batched_tokens, for a budget that never comes).
            busy = running.leftover or running.decodes or running.prefills or done.decodes or done.prefills
            chunking = self.config.enable_chunked_prefill and not busy
            nums = [self._num_new_tokens(r, budget, chunking) for r in group]
            touched = sum(self._num_touched_by_swap_in(r) for r in group)
            if touched > self.kv.pool.num_blocks:
                for request in group:
                    self._ignore(out, request, SWAP_IN_NEVER.format(id=request.request_id))
                continue
            watermark = self.watermark_blocks if busy else 0
            if self.kv.pool.num_free_blocks() - touched < watermark:
                break
            if 0 in nums or not budget.can_schedule(sum(nums), sum(r.num_seqs for r in group)):
                break
            for request in group:
                self.swapped.remove(request)
            out.block_copies += self.kv.swap_in(group)
            for request, num_new in zip(group, nums):
                assert self._allocate(out, request, num_new) is not None, "swap-in room was checked above"
                request.status = RequestStatus.RUNNING
                chunk = self._chunk(request, num_new)
                out.chunks.append(chunk)
                (done.prefills if chunk.is_prefill else done.decodes).append(request)
                budget.add(num_new, request.num_seqs)
        return done

    def _schedule_prefills(self, out: SchedulerOutput, budget: _Budget, chunking: bool) -> list[Request]:
        # V0 also ignores a prompt over _get_prompt_limit (max_model_len, or the budget without chunking); pykv
        # cannot get one: add_request refuses prompts over max_model_len, and max_model_len never exceeds the budget
        # without chunking (pykv.engine.max_model_len), so a re-prefill stays within both.
        admitted = []
        while self.waiting:
            request = self.waiting.peek_request()
            required = cdiv(request.num_tokens, self.kv.block_size)  # the whole sequence, cache hits included
            if self.kv.pool.num_blocks - required < self.watermark_blocks:
                self._ignore(out, request, PROMPT_OVER_CAPACITY.format(n=request.num_tokens))
                continue
            free = self.kv.pool.num_free_blocks()
            if free - required < self.watermark_blocks:
                self._waits(
                    out,
                    request,
                    "whole_prompt",
                    blocks_needed=required + self.watermark_blocks,
                    blocks_free=free,
                    watermark_blocks=self.watermark_blocks,
                    tokens=request.num_tokens,
                )
                break  # AllocStatus.LATER
            # 0.6.3.post1 _get_num_new_tokens counts a prefix-cache hit's tokens as scheduled: they are charged to
            # the budget (the model runner skips their compute); pykv computes the chunk's tokens past the hits
            num_new = self._num_new_tokens(request, budget, chunking)
            if num_new == 0 or not budget.can_schedule(num_new, request.num_seqs):
                if budget.num_seqs + request.num_seqs > budget.max_num_seqs:
                    self._waits(out, request, "max_num_seqs", limit=budget.max_num_seqs)
                else:
                    self._waits(out, request, "token_budget", tokens=num_new, limit=budget.remaining())
                break
            hits = self.kv.get_computed_blocks(request)[: (num_new - 1) // self.kv.block_size]  # within the chunk
            num_hit = len(hits) * self.kv.block_size
            blocks = self._allocate(out, request, num_new - num_hit, hits, num_reserved_tokens=request.num_tokens)
            assert blocks is not None, "can_allocate checked the whole sequence"
            self.kv.record_lookup(request, hits)
            self.waiting.pop_request()
            request.status = RequestStatus.RUNNING
            request.num_computed_tokens = num_hit
            out.chunks.append(self._chunk(request, num_new - num_hit, num_hit))
            budget.add(num_new, request.num_seqs)
            admitted.append(request)
        return admitted

    def _preempt_group(
        self, group: list[Request], step: int, out: SchedulerOutput, why: str | None = None
    ) -> list[PreemptionEvent]:
        """``group`` comes tail first, as V0 preempts it; V0's swapped queue holds a group as one entry, so its
        sequences go there in group order."""
        events = super()._preempt_group(group, step, out, why)
        swapped = [r for r in reversed(group) if r.status is RequestStatus.SWAPPED]
        if len(swapped) > 1:
            for request in swapped:
                self.swapped.remove(request)
            self.swapped.extend(swapped)
        return events

    def _preempt_live(self, live: list[tuple[Request, PreemptionEvent]], out: SchedulerOutput) -> list[PreemptionEvent]:
        """0.6.3.post1 ``Scheduler._preempt``'s modes: "swap" swaps (falling back when the CPU pool is full, see
        ``swap_fallback``); "auto" swaps a group that has or will have several sequences
        (``get_max_num_running_seqs() > 1``) and recomputes a single one; "recompute" always recomputes (vLLM
        0.6.3 would assert on a group of several sequences, pykv recomputes each). A swapped victim's blocks move
        to the CPU pool (``KVCacheManager.swap_out``) and it joins the swapped queue, keeping its progress."""
        mode = self.config.preemption_mode
        swap = bool(live) and (mode == "swap" or (mode == "auto" and sum(v.num_seqs for v, _ in live) > 1))
        if not swap:
            return super()._preempt_live(live, out)
        copies = self.kv.swap_out([v for v, _ in live])
        if copies is not None:
            out.block_copies += copies
            for victim, _ in live:
                victim.status = RequestStatus.SWAPPED
                self.swapped.append(victim)
            return [dataclasses.replace(event, mode="swap") for _, event in live]
        reason = (
            f"CPU swap pool has {self.kv.cpu_pool.num_free_blocks()} free blocks of "
            f"{self.kv.cpu_pool.num_blocks}; the victim needs {sum(e.num_blocks for _, e in live)}"
        )
        events = []
        for victim, event in live:
            if self.config.swap_fallback == "abort":
                victim.undelivered_preemptions -= 1
                victim.finish_message = SWAP_ABORT_MESSAGE
                self._finish(victim, RequestStatus.FINISHED_ABORTED)
                out.aborted.append(victim)
                events.append(dataclasses.replace(event, mode="abort", fallback="abort", reason=reason))
                continue
            self._preempt_by_recompute(victim)
            events.append(dataclasses.replace(event, fallback="recompute", reason=reason))
        return events

    def _requeue(self, victim: Request) -> None:
        self._recomputed.append(victim)  # V0 puts recompute victims back only after the step

    def _finish(self, request: Request, status: RequestStatus) -> None:
        super()._finish(request, status)
        self.kv.free_swapped(request)  # a swapped request aborted: its CPU blocks go too

    def check_invariants(self) -> None:
        super().check_invariants()
        for request in self.swapped:
            assert request.status == RequestStatus.SWAPPED
            assert self.kv.num_blocks_of(request) == 0, f"swapped {request.request_id} holds device blocks"
            cpu_blocks = len(self.kv.swap.block_tables[request.request_id])
            # V0 swaps a table whole: a victim caught mid-(re-)prefill takes its reserved, unwritten blocks along
            reserved = cdiv(max(request.num_computed_tokens, request.num_tokens), self.kv.block_size)
            assert cdiv(request.num_computed_tokens, self.kv.block_size) <= cpu_blocks <= reserved, (
                "swapped KV lost, or padded past its reservation"
            )

    def _ignore(self, out: SchedulerOutput, request: Request, message: str) -> None:
        """V0's FINISHED_IGNORED: finish reason "length", with V0's warning as the message."""
        request.finish_message = message
        self._finish(request, RequestStatus.FINISHED_IGNORED)
        out.ignored.append(request)


def _priority_key(request: Request) -> tuple[int, float]:
    return request.priority, request.arrival_time  # 0.6.3.post1 Scheduler._get_priority


def _order_batch(out: SchedulerOutput, order: list[Request]) -> None:
    """List the step's chunks in ``order`` (requests), as vLLM builds ``scheduled_seq_groups``."""
    rank = {r.request_id: i for i, r in enumerate(order)}
    out.chunks.sort(key=lambda c: rank[c.request_id])


def group_of(request: Request, pool: list[Request]) -> list[Request]:
    """The sequences of ``request``'s group (parallel sampling) among ``pool``, in pool order; V0 schedules,
    preempts and swaps a ``SequenceGroup`` whole."""
    group_id = request.parent_id or request.request_id
    return [r for r in pool if (r.parent_id or r.request_id) == group_id]
