"""Checks of vLLM's scheduling rules on one engine step, shared by focused and property tests. Rules that
differ between releases are checked for the engine's profile (``engine.config.vllm_profile``)."""

from __future__ import annotations

from pykv import LLMEngine, RequestStatus
from pykv.border.vllm_profiles import Engine
from pykv.engine.kv.kv_cache_manager import cdiv


def step_checked(engine: LLMEngine):
    """Take one step and assert the rules and every invariant around it."""
    sched, cfg = engine.scheduler, engine.config
    running_before = [r.request_id for r in sched.running]
    swapped_before = [r.request_id for r in sched.swapped]
    waiting_tokens = {r.request_id: r.num_tokens for r in sched.waiting}
    carried = {r.request_id: r.num_computed_tokens for r in sched.waiting}  # 0 but after 0.10.2's orphaned chunk
    report = engine.step()
    engine.check_invariants()

    # V0 with chunked prefill admits prefills after a preemption and while requests are swapped
    # (vllm/core/scheduler.py, _schedule_chunked_prefill); V1 and V0 without chunking never do.
    v0_chunked = cfg.profile.engine is Engine.V0 and cfg.enable_chunked_prefill
    victims = [e.request_id for e in report.preempted]
    assert len(set(victims)) == len(victims) and set(victims) <= set(running_before), (victims, running_before)
    if cfg.preemption_victim == "last":  # the victim is the tail of the running queue (the last (re-)admitted)
        assert victims == running_before[::-1][: len(victims)], (victims, running_before)
    if victims:
        # Nothing is swapped in in a step that preempted, and (but V0 chunked) nothing admitted.
        assert not report.swapped_in
        if not v0_chunked:
            assert set(report.scheduled) <= set(running_before)
    recomputed = [e.request_id for e in report.preempted if e.mode == "recompute"]
    swapped = [e.request_id for e in report.preempted if e.mode == "swap"]
    # Recompute victims re-enter at the front of waiting (under "priority", at their (priority, arrival) place);
    # swap victims join the back of swapped (V0: a group's sequences in group order, as its one SequenceGroup entry).
    if cfg.preemption_victim != "priority":
        assert [r.request_id for r in sched.waiting][: len(recomputed)] == recomputed[::-1]
    assert sorted(r.request_id for r in list(sched.swapped)[len(sched.swapped) - len(swapped) :]) == sorted(swapped)
    for event in report.preempted:
        if event.mode == "abort":
            assert engine.outputs[event.request_id].finish_reason == "abort"
            continue
        request = sched.requests[event.request_id]
        assert engine.kv.num_blocks_of(request) == 0
        if event.mode == "recompute":
            # vLLM 0.10.2 leaves the chunk of a victim scheduled earlier in the step in the batch, and counts it
            orphaned = [c for c in report.chunks if c.orphaned and c.request_id == event.request_id]
            assert not orphaned or not cfg.profile.victim_chunk_taken_back
            assert request.status == RequestStatus.PREEMPTED
            assert request.num_computed_tokens == sum(c.num_new_tokens for c in orphaned)
        else:
            assert request.status == RequestStatus.SWAPPED and request.num_computed_tokens == event.num_tokens
            # a swap bills what it copied: all its blocks, less those a sibling sequence's copy already moved
            assert event.num_bytes % engine.bytes_per_block == 0
            alone = request.parent_id is None and request.sampling_params.n == 1
            assert (
                event.num_bytes == event.num_blocks * engine.bytes_per_block
                if alone
                else event.num_bytes <= event.num_blocks * engine.bytes_per_block
            )
            # every computed block; a victim caught mid-(re-)prefill also takes its reserved blocks (V0)
            reserved = cdiv(max(event.num_tokens, request.num_tokens), cfg.block_size)
            assert cdiv(event.num_tokens, cfg.block_size) <= event.num_blocks <= reserved
    # Swapped requests come back in order, and before any new prefill is admitted.
    back = [c.request_id for c in report.chunks if c.request_id in swapped_before]
    assert back == swapped_before[: len(back)]
    if any(c.request_id in waiting_tokens for c in report.chunks) and not v0_chunked:
        assert not sched.swapped, "a waiting request was admitted while others stayed swapped"
    assert report.num_batched_tokens <= cfg.max_num_batched_tokens
    assert len(sched.running) <= cfg.max_num_seqs
    _check_head_wait(report, list(waiting_tokens), victims, [r.request_id for r in sched.waiting])
    for chunk in report.chunks:
        if chunk.request_id in waiting_tokens:
            # An admitted (or re-admitted) request starts exactly at its prefix-cache hit plus the blocks loaded
            # from the CPU offloading tier (or, looking nothing up, past 0.10.2's orphaned chunk) ...
            assert chunk.start == carried[chunk.request_id] + chunk.num_cached_tokens + chunk.num_loaded_tokens
            assert not carried[chunk.request_id] or not chunk.num_cached_tokens + chunk.num_loaded_tokens
            assert chunk.num_cached_tokens % cfg.block_size == 0 and chunk.num_loaded_tokens % cfg.block_size == 0
            if engine.kv.offload is None:
                assert chunk.num_loaded_tokens == 0
            elif chunk.num_loaded_tokens and chunk.request_id in sched.requests:
                # The tier stores prompt blocks only (0.33: offload_prompt_only): a block past the request's
                # prompt can only come from another request whose prompt held the same tokens.
                request = sched.requests[chunk.request_id]
                first, end = chunk.num_cached_tokens // cfg.block_size, chunk.start // cfg.block_size
                for i in range(max(first, request.num_prompt_tokens // cfg.block_size), end):
                    tier_block = engine.kv.cpu_pool.lookup(engine.kv.block_hashes(request)[i])
                    assert (
                        tier_block is None or engine.kv.cpu_pool.blocks[tier_block].computed_by != chunk.request_id
                    ), f"{chunk.request_id} loaded its own output block {i} from the tier"
            if not cfg.enable_prefix_caching:
                assert chunk.num_cached_tokens == 0
            # ... and without chunked prefill it re-prefills every token it has, in one go.
            end = chunk.start + chunk.num_new_tokens
            assert (
                end == waiting_tokens[chunk.request_id]
                if not cfg.enable_chunked_prefill
                else end <= waiting_tokens[chunk.request_id]
            )
    return report


def _check_head_wait(report, waiting_before: list[str], victims: list[str], waiting_after: list[str]) -> None:
    """A request that waited before the step and waits after it: the report says why the queue's head waits, names a
    request the scheduler looked at and left waiting, and a rule about blocks has fewer free than it needs."""
    wait = report.head_wait
    if set(waiting_before) & set(waiting_after):
        assert wait is not None, "a request waited on and the report says nothing of why"
    if wait is None:
        return
    assert wait.request_id in waiting_before + victims and wait.request_id in waiting_after, wait
    assert not [c for c in report.chunks if c.request_id == wait.request_id and not c.orphaned], wait
    if wait.rule in ("whole_input", "chunk_blocks", "whole_prompt"):
        assert wait.blocks_needed is not None and wait.blocks_free is not None and wait.tokens
        assert wait.blocks_needed > wait.blocks_free >= 0, wait


def drain_checked(engine: LLMEngine, max_steps: int = 500) -> None:
    """Step (checked) until every request has finished; fail after ``max_steps`` steps instead of looping on."""
    for _ in range(max_steps):
        if not engine.has_unfinished_requests():
            return
        step_checked(engine)
    assert not engine.has_unfinished_requests(), f"requests still unfinished after {max_steps} steps"


def assert_drained(engine: LLMEngine) -> None:
    assert not engine.has_unfinished_requests()
    for block in engine.kv.pool.blocks + engine.kv.cpu_pool.blocks:
        assert block.ref_cnt == 0, "a block still holds a reference at drain"
    assert not engine.kv.block_tables and not engine.kv.swap.block_tables
