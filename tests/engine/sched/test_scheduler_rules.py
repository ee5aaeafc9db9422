"""vLLM's scheduling rules common to every profile, each shown on a small deterministic scenario under the
default profile (v0.33); tests/engine/sched/test_profiles.py pins what differs between releases."""

from rules import assert_drained, drain_checked, step_checked

from pykv import SamplingParams

NO_EOS = SamplingParams(max_tokens=12, ignore_eos=True)


def run_until_preemption(engine, max_steps=100):
    for _ in range(max_steps):
        running = [r.request_id for r in engine.scheduler.running]
        report = step_checked(engine)
        if report.preempted:
            return running, report
    raise AssertionError("no preemption happened")


def run_until_scheduled(engine, request_id, max_steps=100):
    """Step until ``request_id`` has a chunk in the batch; that chunk."""
    for _ in range(max_steps):
        chunk = next((c for c in step_checked(engine).chunks if c.request_id == request_id), None)
        if chunk is not None:
            return chunk
    raise AssertionError(f"{request_id} was not scheduled within {max_steps} steps")


def test_victim_is_last_running_and_reenters_at_front_without_admission(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=6, max_num_seqs=3)
    for i in range(4):
        engine.add_request([10 + i, 11, 12, 13], NO_EOS)
    running, report = run_until_preemption(engine)
    assert running == ["0", "1", "2"] and engine.scheduler.waiting[-1].request_id == "3"
    assert report.preempted[0].request_id == "2" and report.preempted[0].mode == "recompute"
    assert [r.request_id for r in engine.scheduler.waiting] == ["2", "3"]
    assert "3" not in report.scheduled
    victim = engine.scheduler.requests["2"]
    assert victim.num_computed_tokens == 0 and victim.num_preemptions == 1
    assert len(victim.output_token_ids) > 0  # generated tokens are kept


def test_recompute_reprefills_prompt_plus_generated_tokens(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=6, max_num_seqs=3, max_num_batched_tokens=512)
    for i in range(3):
        engine.add_request([10 + i, 11, 12, 13], NO_EOS)
    _, report = run_until_preemption(engine)
    victim = engine.scheduler.requests[report.preempted[0].request_id]
    num_tokens = victim.num_tokens
    assert report.preempted[0].num_tokens == num_tokens - 1  # the last sampled token had no KV yet
    chunk = run_until_scheduled(engine, victim.request_id)
    assert (chunk.start, chunk.num_new_tokens, chunk.is_prefill) == (0, num_tokens, True)
    drain_checked(engine)
    assert_drained(engine)


def test_readmission_starts_at_prefix_cache_hit_on_own_blocks(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=8, max_num_seqs=2, enable_prefix_caching=True)
    engine.add_request(list(range(20, 32)), SamplingParams(max_tokens=10, ignore_eos=True))
    engine.add_request(list(range(40, 52)), SamplingParams(max_tokens=10, ignore_eos=True))
    _, report = run_until_preemption(engine)
    victim = report.preempted[0].request_id
    chunk = run_until_scheduled(engine, victim)
    assert chunk.num_cached_tokens > 0 and chunk.start == chunk.num_cached_tokens


def test_chunked_prefill_splits_prompt_by_budget_and_shares_steps_with_decodes(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=32, max_num_batched_tokens=8)
    engine.add_request([3, 4], SamplingParams(max_tokens=10, ignore_eos=True))
    step_checked(engine)
    engine.add_request(list(range(1, 21)), SamplingParams(max_tokens=2, ignore_eos=True))
    report = step_checked(engine)
    assert [(c.request_id, c.num_new_tokens, c.is_prefill) for c in report.chunks] == [("0", 1, False), ("1", 7, True)]
    report = step_checked(engine)
    assert [(c.request_id, c.start, c.num_new_tokens) for c in report.chunks] == [("0", 3, 1), ("1", 7, 7)]


def test_without_chunked_prefill_a_prompt_is_prefilled_whole(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=32, max_num_batched_tokens=24, enable_chunked_prefill=False)
    engine.add_request(list(range(1, 11)), SamplingParams(max_tokens=4, ignore_eos=True))
    engine.add_request(list(range(1, 16)), SamplingParams(max_tokens=4, ignore_eos=True))
    report = step_checked(engine)
    assert [(c.request_id, c.num_new_tokens) for c in report.chunks] == [("0", 10)]  # 15 more would exceed 24
    report = step_checked(engine)
    assert [(c.request_id, c.num_new_tokens) for c in report.chunks] == [("0", 1), ("1", 15)]


def test_prefix_hits_are_counted_in_tokens(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=32, enable_prefix_caching=True)
    system = list(range(100, 112))  # 3 full blocks
    engine.generate([system + [1, 2]], SamplingParams(max_tokens=2))
    engine.generate([system + [3]], SamplingParams(max_tokens=2))
    metrics = engine.snapshot().metrics
    assert metrics["vllm:prefix_cache_queries_total"] == 14 + 13
    assert metrics["vllm:prefix_cache_hits_total"] == 12
    assert metrics["pykv:prefix_cache_hits_shared_total"] == 12 and metrics["pykv:prefix_cache_hits_own_total"] == 0


def test_abort_frees_blocks_and_reports(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=16)
    rid = engine.add_request([1, 2, 3, 4, 5], SamplingParams(max_tokens=20))
    step_checked(engine)
    assert engine.abort_request(rid)
    assert engine.outputs[rid].finish_reason == "abort"
    assert not engine.abort_request(rid)
    assert_drained(engine)


def test_generate_keeps_prompt_order_and_per_prompt_params(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=64)
    outs = engine.generate(
        [[1, 2, 3], [4, 5]], [SamplingParams(max_tokens=3, ignore_eos=True), SamplingParams(max_tokens=1)]
    )
    assert [o.prompt_token_ids for o in outs] == [[1, 2, 3], [4, 5]]
    assert [len(o.output_token_ids) for o in outs] == [3, 1]


def test_the_report_says_why_the_head_of_the_waiting_queue_waits(make_engine):
    """Issue 48 item 8: a long stall read only "ran 2 requests"; the scheduler now says which rule keeps the head of
    the waiting queue out, with its numbers (0.33.0: the whole input must fit the free blocks first)."""
    for profile, rule in (("v0.33", "whole_input"), ("v0.10", "chunk_blocks"), ("v0.6", "whole_prompt")):
        engine = make_engine(vllm_profile=profile, block_size=4, num_gpu_blocks=7, max_num_seqs=4)
        engine.add_request(list(range(10, 26)), SamplingParams(max_tokens=8, ignore_eos=True), "long")
        assert step_checked(engine).head_wait is None  # nobody else waits
        engine.add_request(list(range(30, 42)), NO_EOS, "next")
        wait = step_checked(engine).head_wait
        free = engine.kv.pool.num_free_blocks()
        assert (wait.request_id, wait.rule, wait.blocks_needed, wait.blocks_free) == ("next", rule, 3, free), wait
        assert wait.tokens == 12 and free < 3
