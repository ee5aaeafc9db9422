"""vLLM V1's scheduling step (every V1 profile): ``vllm/v1/core/sched/scheduler.py``,
``Scheduler.schedule``, with each release's admission rule from ``vllm/v1/core/kv_cache_manager.py``,
``KVCacheManager.allocate_slots``."""

from __future__ import annotations

import dataclasses

from pykv.border.request import Request, RequestStatus
from pykv.border.vllm_profiles import Admission, WatermarkScope
from pykv.engine.sched.scheduler import Scheduler, SchedulerOutput


class V1Scheduler(Scheduler):
    """1. Running requests first, in queue order, each getting the tokens it still lacks within
       ``max_num_batched_tokens``; one that cannot get a block preempts the last running request, again
       and again, until it fits or has preempted itself (which ends the scan).
    2. Only if nobody was preempted this step: waiting requests in order, while ``max_num_seqs``, the
       budget and the pool allow, reusing prefix-cache hits. The first that does not fit stops the
       scan (head-of-line blocking). What "fits" means is the release's:
       - v0.10: blocks for this step's chunk only;
       - v0.33: the whole current input (prompt, plus output so far after a preemption) must fit in
         the free blocks first (``scheduler_reserve_full_isl=True``; a gate, nothing is held), and a
         waiting or preempted request must leave ``watermark`` of the pool free while anything runs.
       With chunked prefill off (v0.33 only: 0.10 always chunks), a request whose prompt exceeds the
       remaining budget ends the scan.
    V1 never ignores a request: the engine refuses at start-up a KV cache too small for max_model_len.
    """

    def schedule(self, step: int) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self._schedule_running(out, step, self.config.max_num_batched_tokens)
        if not out.preempted:  # V1: `if not preempted_reqs:` guards the whole waiting loop
            self._schedule_waiting(out, budget)
        elif self.waiting:
            self._waits(out, self.waiting.peek_request(), "preempted_this_step")
        return out

    def _schedule_running(self, out: SchedulerOutput, step: int, budget: int) -> int:
        """Victims come from the whole running queue. Under "last" that is its tail, never scheduled yet, and a
        request that preempted itself ends the scan. Other policies (``Scheduler.schedule``'s priority branch) may
        pick a request scheduled earlier this step, and the release decides what follows:

        - 0.33.0: its chunk is taken back, its tokens return to the budget and the scan index moves back with the
          queue; a request that preempted itself lets the scan go on to the (higher-priority) requests after it.
        - 0.10.2: the chunk stays in the batch (``num_scheduled_tokens`` keeps it), charged, and is counted from
          the victim's reset progress (``_update_after_schedule``: 0 + its tokens), so the victim later resumes
          past tokens whose KV nobody computed (vLLM fixed it in 0.11.1, PR #26661); the index is not moved back,
          so the request after the current one is skipped this step; a self-preemption ends the scan.
        - 0.32.0: as 0.33.0, but a self-preemption ends the scan (``if new_blocks is None: break``).

        Each release's choice is a profile field: ``victim_chunk_taken_back``, ``scan_past_self_preemption``.
        """
        i = 0
        taken_back = self.profile.victim_chunk_taken_back
        while i < len(self.running) and budget > 0:
            request = self.running[i]
            num_new = min(request.num_tokens - request.num_computed_tokens, budget)
            while self._allocate(out, request, num_new) is None:
                choice = self._choose_victim(self.running)
                victim = choice.request
                j = self.running.index(victim)
                del self.running[j]
                if j < i:  # scheduled earlier in this step
                    k = next(k for k, c in enumerate(out.chunks) if c.request_id == victim.request_id)
                    if taken_back:
                        budget += out.chunks.pop(k).num_new_tokens
                        i -= 1
                    else:
                        out.chunks[k] = dataclasses.replace(out.chunks[k], start=0, orphaned=True)
                out.preempted.append(self._preempt(victim, step, out, choice.why))
                if victim is request:
                    if self.config.preemption_victim == "last" or not self.profile.scan_past_self_preemption:
                        return budget  # the request preempted itself: the scan ends
                    break  # it left the queue: i already points at the next request
            else:
                out.chunks.append(self._chunk(request, num_new))
                budget -= num_new
                i += 1
        return budget

    def _schedule_waiting(self, out: SchedulerOutput, budget: int) -> None:
        """With the CPU offloading tier, blocks past the device hit that the tier holds are loaded, not computed
        (0.33.0: ``connector.get_num_new_matched_tokens`` after ``get_computed_blocks``). Only a request with no
        computed tokens looks anything up; one that has some (0.10.2's orphaned chunk) goes on from them."""
        bs = self.kv.block_size
        while self.waiting:
            request = self.waiting.peek_request()
            if budget <= 0:
                self._waits(out, request, "token_budget")
                break
            if self.num_running_seqs() + request.num_seqs > self.config.max_num_seqs:
                # V1 stops at max_num_seqs running; pykv: a request yet to fork into n sequences needs room for all n
                self._waits(out, request, "max_num_seqs", limit=self.config.max_num_seqs)
                break
            looks_up = request.num_computed_tokens == 0
            hits = self.kv.get_computed_blocks(request) if looks_up else []
            loads = self.kv.offloaded_hits(request, len(hits)) if looks_up else []
            num_loaded = len(loads) * bs
            num_new = request.num_tokens - request.num_computed_tokens - len(hits) * bs - num_loaded
            if num_new > budget and not self.config.enable_chunked_prefill:
                self._waits(out, request, "prompt_over_budget", tokens=num_new, limit=budget)
                break  # 0.33: "If chunked_prefill is disabled, we can stop the scheduling here."
            num_new = min(num_new, budget)
            if not self._fits(out, request, num_loaded + num_new, hits):
                if looks_up:
                    self.kv.record_lookup(request, hits, admitted=False)
                break
            if looks_up:
                self.kv.record_lookup(request, hits)
                if self.kv.offload is not None:
                    self.kv.record_external_lookup(request, len(hits) * bs, num_loaded)
            self._admit(out, request, num_new, hits, loads)
            budget -= num_new

    def _admit(self, out: SchedulerOutput, request: Request, num_new: int, hits: list[int], loads: list[int]) -> None:
        """A waiting request whose blocks were just allocated joins the back of the running queue; blocks found
        in the offloading tier are copied in before the forward pass."""
        self.waiting.pop_request()
        request.status = RequestStatus.RUNNING
        if loads:
            out.block_copies.append(self.kv.load_offloaded(request, loads, len(hits)))
        num_cached, num_loaded = len(hits) * self.kv.block_size, len(loads) * self.kv.block_size
        request.num_computed_tokens += num_cached + num_loaded
        if not request.num_preemptions:  # 0.33.0 records a prefill's stats at the first admission only
            request.first_admission_cached_tokens = num_cached + num_loaded
        self.running.append(request)
        out.chunks.append(self._chunk(request, num_new, num_cached, num_loaded))

    def _fits(self, out: SchedulerOutput, request: Request, num_new: int, hits: list[int]) -> bool:
        """Allocate the admission's blocks if the release's rule allows; False (nothing changed, the rule and its
        numbers on ``out.head_wait``) if not."""
        keep_free = 0
        if self.profile.watermark_scope is WatermarkScope.ADMISSION_WHILE_RUNNING and self.running:
            assert request.status in (RequestStatus.WAITING, RequestStatus.PREEMPTED)
            keep_free = self.watermark_blocks
        free = self.kv.pool.num_free_blocks()
        if self.profile.admission is Admission.FULL_INPUT:
            full = min(request.num_tokens, self.max_model_len)
            need = self.kv.num_blocks_to_allocate(request, full, hits)
            if need + keep_free > free:
                self._waits(
                    out,
                    request,
                    "whole_input",
                    blocks_needed=need + keep_free,
                    blocks_free=free,
                    watermark_blocks=keep_free,
                    tokens=full,
                )
                return False
        if self._allocate(out, request, num_new, hits, keep_free=keep_free) is None:
            total = request.num_computed_tokens + len(hits) * self.kv.block_size + num_new
            need = self.kv.num_blocks_to_allocate(request, total, hits)
            self._waits(
                out,
                request,
                "chunk_blocks",
                blocks_needed=need + keep_free,
                blocks_free=free,
                watermark_blocks=keep_free,
                tokens=num_new,
            )
            return False
        return True
