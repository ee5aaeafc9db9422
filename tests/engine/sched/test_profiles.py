"""Each vLLM profile's rules, pinned step by step on small scenarios (block_size 4, random model).

Every test says which vLLM source it transcribes; the releases are 0.6.3.post1 ("v0.6"), 0.10.2 ("v0.10")
and 0.33.0 ("v0.33")."""

import pytest
from rules import assert_drained, step_checked

from pykv import SamplingParams
from pykv.border.vllm_profiles import DEFAULT_PROFILE, PROFILES
from testkit.vllm_source import require_vllm_source


def usable(n, profile=DEFAULT_PROFILE):
    """num_gpu_blocks for ``n`` usable blocks: a V1 pool also holds its null block (0.10.2 and 0.33.0
    vllm/v1/core/block_pool.py BlockPool.__init__ keeps block 0 back)."""
    return n + PROFILES[profile].null_block


def params(max_tokens):
    return SamplingParams(max_tokens=max_tokens, ignore_eos=True)


def trace(engine, arrivals=None, max_steps=60):
    """Run to the end; per step: (chunks as (id, start, n), preempted ids, waiting ids after the step, log lines,
    free device blocks after the step)."""
    steps = []
    for step in range(1, max_steps + 1):
        for rid, (prompt, max_tokens) in (arrivals or {}).get(step, {}).items():
            engine.add_request(prompt, params(max_tokens), request_id=rid)
        report = step_checked(engine)
        steps.append(
            (
                [(c.request_id, c.start, c.num_new_tokens) for c in report.chunks],
                [p.request_id for p in report.preempted],
                [r.request_id for r in engine.scheduler.waiting],
                report.log_lines,
                engine.kv.pool.num_free_blocks(),
            )
        )
        if not engine.has_unfinished_requests():
            assert_drained(engine)
            return steps
    raise AssertionError("did not finish")


def three_and_a_late_one(make_engine, **config):
    """a, b (1 block each) and c (2 blocks) fill 4 of 6 usable blocks; d (3 tokens) arrives at step 2, when a
    and b each need a second block and c a third: the pool cannot hold them all."""
    blocks = usable(6, config.get("vllm_profile", DEFAULT_PROFILE))
    engine = make_engine(block_size=4, num_gpu_blocks=blocks, max_num_seqs=4, max_num_batched_tokens=64, **config)
    engine.add_request([11, 12, 13, 14], params(6), request_id="a")
    engine.add_request([21, 22, 23, 24], params(6), request_id="b")
    engine.add_request([31, 32, 33, 34, 35, 36, 37, 38], params(6), request_id="c")
    return engine, trace(engine, {2: {"d": ([41, 42, 43], 2)}})


def test_v0_without_chunking_a_step_is_all_prefill_or_all_decode(make_engine):
    """vllm/core/scheduler.py Scheduler._schedule_default (0.6.3.post1): waiting prefills first (nothing is
    swapped); decodes only in a step that scheduled no prefill; _schedule_running pops victims off the tail
    of the queue, down to the request itself; recompute victims are extendleft-ed into waiting after."""
    engine, steps = three_and_a_late_one(make_engine, vllm_profile="v0.6", enable_chunked_prefill=False)
    assert steps[1][0] == [("d", 0, 3)]  # step 2: d alone, a b c skip their decode
    assert steps[2][:3] == ([("a", 4, 1), ("b", 4, 1)], ["d", "c"], ["c", "d"])  # d, then c preempts itself
    assert steps[7][0] == [("c", 0, 9), ("d", 0, 4)]  # both re-prefilled together, prompt + output
    # The warning is written for the 1st, 51st, ... preemption only (Scheduler._preempt), with count + 1.
    warnings = [line for s in steps for line in s[3] if line.startswith("Sequence group")]
    assert warnings == [
        "Sequence group d is preempted by PreemptionMode.RECOMPUTE mode because there is not "
        "enough KV cache space. This can affect the end-to-end performance. Increase "
        "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
        "total_num_cumulative_preemption=1"
    ]
    m = engine.metrics
    assert m.value("vllm:num_preemptions_total") == 2
    # V0 counts every prefill chunk (vllm/engine/llm_engine.py LLMEngine._get_stats): 4+4+8+3, then 9+4 again.
    assert m.value("vllm:prompt_tokens_total") == 32 == m.value("pykv:prefill_tokens_total")


def test_v0_with_chunking_admits_prefills_after_a_preemption(make_engine):
    """vllm/core/scheduler.py Scheduler._schedule_chunked_prefill (0.6.3.post1): running -> swapped (only if
    nobody was preempted) -> prefills, which run whatever happened before; the batch lists the new prefills
    first (scheduled_seq_groups = prefills + running prefills + ... + running decodes)."""
    engine, steps = three_and_a_late_one(make_engine, vllm_profile="v0.6", enable_chunked_prefill=True)
    assert steps[1][:3] == ([("d", 0, 3), ("a", 4, 1), ("b", 4, 1)], ["c"], ["c"])
    assert engine.metrics.value("vllm:num_preemptions_total") == 1


@pytest.mark.parametrize("profile", ["v0.10", "v0.33"])
def test_v1_admits_nobody_in_a_step_that_preempted(make_engine, profile):
    """vllm/v1/core/sched/scheduler.py Scheduler.schedule (0.10.2, 0.33.0): the waiting loop runs only
    `if not preempted_reqs`; a victim goes to the front of waiting (prepend_request)."""
    engine, steps = three_and_a_late_one(make_engine, vllm_profile=profile)
    assert steps[1][:3] == ([("a", 4, 1), ("b", 4, 1)], ["c"], ["c", "d"])
    assert steps[6][0] == [("c", 0, 9), ("d", 0, 3)]
    assert not any(line.startswith("Sequence group") for s in steps for line in s[3])  # V1 has no such line
    m = engine.metrics
    # V1 counts a prompt once per request (vllm/v1/metrics/stats.py IterationStats): 4+4+8+3, not c's re-prefill.
    assert m.value("vllm:prompt_tokens_total") == 19 and m.value("pykv:prefill_tokens_total") == 28


def long_prompt_behind_a_decode(make_engine, profile):
    """a decodes; b's 20-token prompt (5 of 6 usable blocks) arrives at step 2 with a budget of 8 tokens a step."""
    engine = make_engine(
        block_size=4, num_gpu_blocks=usable(6, profile), max_num_seqs=4, max_num_batched_tokens=8, vllm_profile=profile
    )
    engine.add_request([11, 12, 13, 14], params(14), request_id="a")
    return engine, trace(engine, {2: {"b": (list(range(100, 120)), 2)}})


def test_v0_10_admits_on_the_first_chunk_and_storms_mid_prefill(make_engine):
    """vllm/v1/core/kv_cache_manager.py KVCacheManager.allocate_slots (0.10.2) allocates this step's chunk
    only, so b is admitted with 2 blocks, cannot get its next ones, and preempts itself, again and again."""
    engine, steps = long_prompt_behind_a_decode(make_engine, "v0.10")
    assert steps[1][0] == [("a", 4, 1), ("b", 0, 7)] and steps[2][0] == [("a", 5, 1), ("b", 7, 7)]
    assert steps[3][:2] == ([("a", 6, 1)], ["b"])
    assert engine.metrics.value("pykv:num_preemptions_total") == 6
    assert engine.metrics.value("pykv:prefill_tokens_total") == 73  # 24 needed, 49 thrown away


@pytest.mark.parametrize("profile, free_after_first_chunk", [("v0.33", 4), ("v0.6", 1)])
def test_whole_input_gates_prevent_the_mid_prefill_storm(make_engine, profile, free_after_first_chunk):
    """0.33.0: allocate_slots(full_sequence_must_fit=scheduler_reserve_full_isl=True) admits b only once its
    whole input fits the free blocks, but allocates only the chunk; 0.6.3.post1:
    SelfAttnBlockSpaceManager.can_allocate / allocate reserve the whole prompt at admission."""
    engine, steps = long_prompt_behind_a_decode(make_engine, profile)
    assert all(chunk[0] == "a" for s in steps[:13] for chunk in s[0])  # b waits while a runs
    assert steps[14][0] == [("b", 0, 8)]
    assert steps[14][4] == free_after_first_chunk  # v0.33 allocated the chunk (2 blocks), V0 the prompt (5)
    assert engine.metrics.value("pykv:num_preemptions_total") == 0


def low_priority_first(make_engine, profile, lo_prompt):
    """lo (priority 5) runs alone, then hi (0) and nxt (1) join it and fill the 3 usable blocks; at step 3 hi needs
    a second block. With a 2-token prompt lo's decode still fits, so the victim (lo, the worst priority) was
    scheduled earlier in the step; with a 3-token prompt lo needs the block first and preempts itself."""
    engine = make_engine(
        block_size=4,
        num_gpu_blocks=usable(3, profile),
        max_num_seqs=4,
        max_num_batched_tokens=64,
        vllm_profile=profile,
        preemption_victim="priority",
    )
    engine.add_request(list(range(11, 11 + lo_prompt)), params(6), request_id="lo", priority=5)
    steps = []
    while engine.has_unfinished_requests():
        if engine.step_count == 1:
            engine.add_request([21, 22, 23, 24], params(4), request_id="hi", priority=0)
            engine.add_request([31, 32, 33], params(4), request_id="nxt", priority=1)
        report = step_checked(engine)
        steps.append(
            (
                [(c.request_id, c.start, c.num_new_tokens, c.orphaned) for c in report.chunks],
                [p.request_id for p in report.preempted],
                report.num_batched_tokens,
            )
        )
    assert_drained(engine)
    return engine, steps


def test_v1_priority_victim_scheduled_earlier_in_the_step(make_engine):
    """vllm/v1/core/sched/scheduler.py Scheduler.schedule, the priority branch. 0.33.0 takes the victim's chunk back
    (num_scheduled_tokens.pop, token_budget +=, req_index -= 1) and schedules everyone after it. 0.10.2 only removes
    it from scheduled_running_reqs: its token stays in num_scheduled_tokens (the batch, the budget) and
    _update_after_schedule counts it from the reset 0, so lo resumes at token 1; req_index is not moved back, so nxt
    is skipped this step. (Both checked against vLLM's own schedulers, block for block.)"""
    _, v033 = low_priority_first(make_engine, "v0.33", lo_prompt=2)
    assert v033[2] == ([("hi", 4, 1, False), ("nxt", 3, 1, False)], ["lo"], 2)
    assert ("lo", 0, 4, False) in v033[5][0]
    engine, v010 = low_priority_first(make_engine, "v0.10", lo_prompt=2)
    assert v010[2] == ([("lo", 0, 1, True), ("hi", 4, 1, False)], ["lo"], 2)
    assert v010[3][0] == [("hi", 5, 1, False), ("nxt", 3, 1, False)]
    assert ("lo", 1, 3, False) in v010[5][0]  # it resumes past the orphaned token
    assert engine.outputs["lo"].num_preemptions == 2


def test_v1_priority_self_preemption_ends_the_scan_in_0_10(make_engine):
    """The same branch when the request being scheduled is the worst running one: 0.33.0 goes on to the requests
    after it (`continue` when request.status == PREEMPTED); 0.10.2 ends the scan (`break`), so nobody runs."""
    _, v033 = low_priority_first(make_engine, "v0.33", lo_prompt=3)
    assert v033[2] == ([("hi", 4, 1, False), ("nxt", 3, 1, False)], ["lo"], 2)
    _, v010 = low_priority_first(make_engine, "v0.10", lo_prompt=3)
    assert v010[2] == ([], ["lo"], 0)
    assert v010[3][0] == [("hi", 4, 1, False), ("nxt", 3, 1, False)]


def test_v0_33_watermark_applies_to_admissions_while_something_runs(make_engine):
    """vllm/v1/core/kv_cache_manager.py allocate_slots (0.33.0): watermark blocks are kept free for WAITING or
    PREEMPTED requests, only when has_scheduled_reqs (something runs)."""
    engine = make_engine(
        block_size=4, num_gpu_blocks=usable(6, "v0.33"), max_num_seqs=4, vllm_profile="v0.33", watermark=0.5
    )  # int(0.5 * 7) = 3: vLLM counts the null block in num_blocks
    engine.add_request([11, 12, 13, 14, 15, 16, 17, 18, 19], params(8), request_id="a")  # 3 blocks
    engine.add_request([21, 22, 23, 24, 25], params(2), request_id="b")  # 2 blocks
    report = step_checked(engine)
    assert report.scheduled == ["a"]  # 6 free - 3 = 3 kept (nothing ran); then 3 free - 2 < 3 for b
    while "b" not in report.scheduled:
        report = step_checked(engine)
    assert engine.outputs["a"].finish_reason == "length"  # b waited until a finished
    assert engine.scheduler.watermark_blocks == 3


def test_v0_watermark_holds_back_every_admission(make_engine):
    """vllm/core/block_manager.py SelfAttnBlockSpaceManager.can_allocate (0.6.3.post1): LATER unless free -
    required >= watermark_blocks, NEVER if total - required < watermark_blocks (ignored, reason "length")."""
    engine = make_engine(block_size=4, num_gpu_blocks=6, max_num_seqs=4, vllm_profile="v0.6", watermark=0.2)
    assert engine.scheduler.watermark_blocks == 1
    engine.add_request(list(range(30, 51)), params(2), request_id="big")  # 21 tokens: 6 blocks > 6 - 1
    engine.add_request([11, 12, 13, 14], params(2), request_id="a")
    report = step_checked(engine)
    (ignored,) = report.finished
    assert (ignored.request_id, ignored.finish_reason) == ("big", "length")
    assert ignored.message == (
        "Input prompt (21 tokens) + lookahead slots (0) is too long and exceeds the capacity of block_manager"
    )
    assert engine.snapshot().request("big").status == "finished_ignored"
    assert report.scheduled == ["a"]


@pytest.mark.parametrize("profile", ["v0.6", "v0.33"])
def test_without_chunking_max_model_len_cannot_exceed_the_budget(make_engine, profile):
    """vllm/config.py SchedulerConfig._verify_args (0.6.3.post1), vllm/config/scheduler.py verify_max_model_len
    (0.33.0): without chunked prefill, max_num_batched_tokens < max_model_len is refused. pykv fits an unset
    max_model_len to the budget and says so."""
    engine = make_engine(
        block_size=4, num_gpu_blocks=8, vllm_profile=profile, enable_chunked_prefill=False, max_num_batched_tokens=8
    )
    assert engine.max_model_len == 8 and "fitted to max_num_batched_tokens (8)" in engine.startup_lines[-1]
    with pytest.raises(ValueError, match=r"The prompt has 10 tokens but max_model_len is 8"):
        engine.add_request(list(range(30, 40)), params(2))
    with pytest.raises(ValueError, match=r"max_num_batched_tokens \(8\) is smaller than max_model_len \(16\)"):
        make_engine(
            block_size=4,
            num_gpu_blocks=8,
            vllm_profile=profile,
            enable_chunked_prefill=False,
            max_num_batched_tokens=8,
            max_model_len=16,
        )


def test_v1_never_ignores_a_request_stopped_by_max_model_len_instead(make_engine):
    """V1's scheduler has no ignore path; the engine checks the cache against max_model_len at start-up
    (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory, 0.10.2). pykv fits an unset
    max_model_len to the pool (as 0.33.0's --max-model-len -1) and a request stops there with "length"."""
    engine = make_engine(block_size=4, num_gpu_blocks=usable(4, "v0.33"), vllm_profile="v0.33")
    assert engine.max_model_len == 16 and engine.startup_lines[0].startswith("Auto-fit max_model_len: reduced from")
    rid = engine.add_request(list(range(1, 15)), SamplingParams(max_tokens=8))
    while engine.has_unfinished_requests():
        step_checked(engine)
    out = engine.outputs[rid]
    assert out.finish_reason == "length" and len(out.output_token_ids) == 2  # 14 + 2 = max_model_len
    with pytest.raises(ValueError, match=r"max seq len \(64\).*estimated maximum model length is 16"):
        make_engine(block_size=4, num_gpu_blocks=usable(4), max_model_len=64)
    with pytest.raises(ValueError, match=r"max seq len \(64\) is larger than the maximum number of tokens"):
        make_engine(block_size=4, num_gpu_blocks=4, max_model_len=64, vllm_profile="v0.6")


def test_v1_counts_a_preemption_when_the_request_next_produces_output(make_engine):
    """vllm/v1/metrics/stats.py IterationStats.update_from_events: PREEMPTED events ride on the request's next
    EngineCoreOutput, so vllm:num_preemptions lags; the stats line never counts it (0.33.0 vllm/v1/metrics/loggers.py
    LoggingStatLogger.log zeroes num_preemptions in _update_stats before its `Preemptions: %d` check)."""
    engine = make_engine(
        block_size=4,
        num_gpu_blocks=6,
        max_num_seqs=4,
        max_num_batched_tokens=8,
        vllm_profile="v0.33",
        log_stats_interval=1,
    )
    engine.add_request([11, 12, 13, 14], params(14), request_id="a")
    counts, preempted_at, lines = [], None, []
    while engine.has_unfinished_requests():
        report = step_checked(engine)
        if report.step == 2:
            engine.add_request(list(range(100, 110)), params(4), request_id="b")
        counts.append(
            (engine.metrics.value("pykv:num_preemptions_total"), engine.metrics.value("vllm:num_preemptions_total"))
        )
        lines += report.log_lines
        if report.preempted and preempted_at is None:
            preempted_at = report.step
    assert preempted_at is not None
    pykv_now, vllm_now = counts[preempted_at - 1]
    assert pykv_now == 1 and vllm_now == 0  # not yet reported
    assert counts[-1][0] == counts[-1][1]  # caught up once the victim produced output
    assert lines and not any("Preemptions" in line for line in lines)


def test_profiles_change_schedules_never_tokens(make_engine):
    outputs = {}
    for profile, chunked in (("v0.6", False), ("v0.6", True), ("v0.10", True), ("v0.33", True)):
        engine, _ = three_and_a_late_one(make_engine, vllm_profile=profile, enable_chunked_prefill=chunked)
        outputs[profile, chunked] = {rid: o.output_token_ids for rid, o in engine.outputs.items()}
    first = next(iter(outputs.values()))
    assert all(o == first for o in outputs.values())


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"vllm_profile": "v0.7"}, f"vllm_profile must be one of {tuple(PROFILES)}"),
        ({"vllm_profile": "v0.33", "preemption_mode": "auto"}, "vllm_profile='v0.6'"),
        ({"vllm_profile": "v0.10", "watermark": 0.1}, "watermark is not a knob of vllm_profile='v0.10'"),
        ({"vllm_profile": "v0.33", "swap_fallback": "abort"}, "use vllm_profile='v0.6'"),
        (
            {"vllm_profile": "v0.6", "enable_prefix_caching": True, "max_num_batched_tokens": 10},
            "multiple of block_size",
        ),
    ],
)
def test_a_knob_or_mode_a_profile_lacks_is_one_line_naming_the_profile(changes, message):
    from pykv import EngineConfig

    with pytest.raises(ValueError) as e:
        EngineConfig(**changes)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_with_profile_resets_what_the_new_profile_lacks():
    from pykv import EngineConfig

    v0 = EngineConfig(vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=8, watermark=0.1)
    v1, reset = v0.with_profile("v0.10")
    assert (v1.preemption_mode, v1.num_cpu_blocks, v1.watermark) == ("recompute", None, None)
    assert reset == ["num_cpu_blocks", "preemption_mode", "watermark"]


PROFILE_CONFIGS = {  # every scheduling order pykv has, and swap
    "v0.6 default": {"vllm_profile": "v0.6", "enable_chunked_prefill": False, "max_num_batched_tokens": 1024},
    "v0.6 chunked": {"vllm_profile": "v0.6"},
    "v0.6 swap": {"vllm_profile": "v0.6", "preemption_mode": "swap", "num_cpu_blocks": 8},
    "v0.10": {"vllm_profile": "v0.10"},
    "v0.33": {"vllm_profile": "v0.33"},
}


@pytest.mark.parametrize(
    "preset, pool", [("burst", 24), ("shared_prefix", 24), ("long_context", 32), ("storm", 24), ("spread", 24)]
)
def test_every_preset_gives_the_same_tokens_under_every_profile(random_llama, random_llama_path, preset, pool):
    """Profiles change schedules, never greedy tokens: each preset, on a pool that preempts, under every order."""
    from pykv import EngineConfig
    from pykv.border.workload import make_workload
    from pykv.lab.completed_run import run_to_completion

    tokens, preemptions = {}, {}
    for name, changes in PROFILE_CONFIGS.items():
        config = EngineConfig(
            model=str(random_llama_path),
            num_gpu_blocks=pool,
            max_num_seqs=6,
            enable_prefix_caching=preset == "shared_prefix",
            **changes,
        )
        run = run_to_completion(config, make_workload(preset, seed=1), random_llama)
        assert run.done, name
        tokens[name] = {o.request_id: o.output_token_ids for o in run.outputs}
        preemptions[name] = run.engine.metrics.value("pykv:num_preemptions_total")
    assert all(t == tokens["v0.33"] for t in tokens.values())
    assert any(preemptions.values()), "the pool should preempt under some profile"


def test_v033_models_the_synchronous_scheduler_and_says_so():
    """0.33.0 config/scheduler.py: async_scheduling None, which config/vllm.py VllmConfig turns True (AsyncScheduler)
    unless something is incompatible; 0.10.2 config/scheduler.py defaults it to False. pykv models the synchronous
    Scheduler in every profile, and says so where v0.33 is described."""
    assert PROFILES["v0.33"].async_scheduling_default and not PROFILES["v0.10"].async_scheduling_default
    assert "synchronous scheduler" in PROFILES["v0.33"].summary
    assert (
        "async_scheduling: bool | None = None"
        in (require_vllm_source("0.33.0") / "vllm/config/scheduler.py").read_text()
    )
    assert "async_scheduling: bool = False" in (require_vllm_source("0.10.2") / "vllm/config/scheduler.py").read_text()


def test_v010_starts_with_a_max_model_len_over_an_overridden_pool(make_engine):
    """0.10.2 vllm/v1/core/kv_cache_utils.py get_kv_cache_config: check_enough_kv_cache_memory reads the profiled
    memory, and get_num_blocks applies --num-gpu-blocks-override after it, so a small override never refuses to
    start; the request that outgrows the pool is preempted again and again (pykv's livelock guard ends it). V0 and
    0.33.0 check the override (worker/worker.py raise_if_cache_size_invalid; v1/core/kv_cache_planning.py
    get_kv_cache_configs), and refuse."""
    engine = make_engine(
        block_size=4,
        num_gpu_blocks=usable(4, "v0.10"),
        max_model_len=64,
        vllm_profile="v0.10",
        max_num_batched_tokens=8,
    )
    assert engine.max_model_len == 64 and "vLLM 0.10.2 starts anyway" in engine.startup_lines[-1]
    rid = engine.add_request(list(range(1, 15)), params(8))
    for _ in range(400):
        if not engine.has_unfinished_requests():
            break
        engine.step()
    assert engine.outputs[rid].finish_reason == "abort"  # 14 + 8 tokens never fit 16: V1 never ignores it
    fitted = make_engine(block_size=4, num_gpu_blocks=usable(4, "v0.10"), vllm_profile="v0.10")
    assert "it would start with max_model_len" in fitted.startup_lines[0] and "refuse" not in fitted.startup_lines[0]
    v0 = make_engine(block_size=4, num_gpu_blocks=4, vllm_profile="v0.6")
    assert v0.startup_lines[0].endswith("it would refuse to start]")
    for profile in ("v0.6", "v0.33"):
        with pytest.raises(ValueError, match="start-up check"):
            make_engine(block_size=4, num_gpu_blocks=usable(4, profile), max_model_len=64, vllm_profile=profile)
