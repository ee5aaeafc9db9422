"""Checks of vLLM's scheduling rules on one engine step, shared by focused and property tests."""

from __future__ import annotations

from pykv import LLMEngine, RequestStatus


def step_checked(engine: LLMEngine):
    """Take one step and assert the rules and every invariant around it."""
    running_before = [r.request_id for r in engine.scheduler.running]
    waiting_before = {r.request_id for r in engine.scheduler.waiting}
    report = engine.step()
    engine.check_invariants()
    sched, cfg = engine.scheduler, engine.config

    victims = [e.request_id for e in report.preempted]
    # The victim is always the most recently admitted running request (the tail of the queue).
    assert victims == running_before[::-1][: len(victims)], (victims, running_before)
    if victims:
        # No admission in a step that preempted; victims re-enter at the front of waiting.
        assert set(report.scheduled) <= set(running_before)
        assert [r.request_id for r in sched.waiting][: len(victims)] == victims[::-1]
        for rid in victims:
            request = sched.requests[rid]
            assert request.status == RequestStatus.PREEMPTED and request.num_computed_tokens == 0
            assert engine.kv.num_blocks_of(request) == 0
    assert report.num_batched_tokens <= cfg.max_num_batched_tokens
    assert len(sched.running) <= cfg.max_num_seqs
    for chunk in report.chunks:
        if chunk.request_id in waiting_before:
            # An admitted (or re-admitted) request starts exactly at its prefix-cache hit.
            assert chunk.start == chunk.num_cached_tokens
            assert chunk.num_cached_tokens % cfg.block_size == 0
            if not cfg.enable_prefix_caching:
                assert chunk.num_cached_tokens == 0
            if not cfg.enable_chunked_prefill:
                request = sched.requests.get(chunk.request_id)
                prompt_len = len(engine.outputs[chunk.request_id].prompt_token_ids) if request is None else request.num_tokens
                assert chunk.num_new_tokens >= 1 and chunk.start + chunk.num_new_tokens <= prompt_len + 1
    return report


def assert_drained(engine: LLMEngine) -> None:
    assert not engine.has_unfinished_requests()
    assert all(b.ref_cnt == 0 for b in engine.kv.pool.blocks), "a block still holds a reference at drain"
    assert not engine.kv.block_tables
