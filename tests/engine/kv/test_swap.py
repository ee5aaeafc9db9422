"""Swap preemption: bit-identical round trips, exact byte counts, fallbacks, the watermark."""

import pytest
import torch
from rules import assert_drained, drain_checked, step_checked

from pykv import SamplingParams
from pykv.engine.kv.cache_engine import CacheEngine
from pykv.engine.model.model import ModelConfig

LONG = SamplingParams(max_tokens=16, ignore_eos=True)


def crowd(engine, n=3, prompt_len=4):
    for i in range(n):
        engine.add_request([10 + i] + list(range(11, 10 + prompt_len)), LONG)


def run_until(engine, predicate, max_steps=200):
    for _ in range(max_steps):
        report = step_checked(engine)
        if predicate(report):
            return report
    raise AssertionError(f"condition not met within {max_steps} steps")


@pytest.mark.parametrize("swap_copy", ["batched", "per_block"])
def test_cache_engine_round_trip_is_bit_identical(swap_copy):
    cfg = ModelConfig(
        64,
        32,
        64,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        head_dim=8,
        rms_norm_eps=1e-6,
        rope_theta=1e4,
        max_position_embeddings=64,
        tie_word_embeddings=False,
        attention_bias=False,
    )
    cache = CacheEngine(
        cfg, num_gpu_blocks=6, num_cpu_blocks=4, block_size=4, dtype="float32", device="cpu", swap_copy=swap_copy
    )
    cache.gpu_cache.copy_(torch.randn_like(cache.gpu_cache))
    original = cache.gpu_cache.clone()
    out = cache.swap_out([(5, 0), (2, 3)])
    assert out.num_bytes == 2 * CacheEngine.bytes_per_block(cfg, 4, "float32")
    assert out.num_copies == (1 if swap_copy == "batched" else 2 * 2 * 2)
    cache.gpu_cache.zero_()
    cache.swap_in([(0, 1), (3, 4)])
    assert torch.equal(cache.gpu_cache[:, :, 1], original[:, :, 5])
    assert torch.equal(cache.gpu_cache[:, :, 4], original[:, :, 2])


def test_engine_swap_moves_the_exact_kv_and_brings_it_back(make_engine):
    engine = make_engine(
        block_size=4, num_gpu_blocks=6, max_num_seqs=3, vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=8
    )
    crowd(engine)
    for _ in range(100):
        before = engine.cache.gpu_cache.clone()
        tables = {rid: list(t) for rid, t in engine.kv.block_tables.items()}
        report = step_checked(engine)
        if report.preempted:
            break
    else:
        raise AssertionError("no preemption within 100 steps")
    (event,) = report.preempted
    assert event.mode == "swap" and event.num_bytes == event.num_blocks * engine.bytes_per_block
    cpu_ids = engine.kv.swap.block_tables[event.request_id]
    for gpu, cpu in zip(tables[event.request_id], cpu_ids):
        assert torch.equal(engine.cache.cpu_cache[:, :, cpu], before[:, :, gpu])
    swapped_kv = engine.cache.cpu_cache[:, :, cpu_ids].clone()
    num_tokens = event.num_tokens
    report = run_until(engine, lambda r: r.swapped_in)
    (back,) = report.swapped_in
    assert back.request_id == event.request_id and back.swap_in_s is not None and back.steps_lost >= 1
    table = engine.kv.block_tables[event.request_id]
    for i, gpu in enumerate(table[: len(cpu_ids)]):
        filled = min(4, num_tokens - 4 * i)  # the swap-in step's forward appends after these slots
        assert torch.equal(engine.cache.gpu_cache[:, :, gpu, :filled], swapped_kv[:, :, i, :filled])
    drain_checked(engine)
    assert_drained(engine)
    m = engine.metrics
    swaps = [c for c in engine.preemptions() if c.mode == "swap"]
    assert m.value("pykv:swapped_out_bytes_total") == sum(c.num_bytes for c in swaps)
    assert m.value("pykv:swapped_in_bytes_total") == sum(c.num_bytes for c in swaps)
    assert m.value("pykv:swap_out_seconds_total") == pytest.approx(sum(c.swap_out_s for c in swaps))
    assert m.value("vllm:num_preemptions_total") == len(engine.preemptions())


def test_full_cpu_pool_falls_back_to_recompute_and_says_so(make_engine, caplog):
    engine = make_engine(
        block_size=4, num_gpu_blocks=6, max_num_seqs=3, vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=0
    )
    crowd(engine)
    with caplog.at_level("WARNING", logger="pykv"):
        report = run_until(engine, lambda r: r.preempted)
    (event,) = report.preempted
    assert (event.mode, event.fallback) == ("recompute", "recompute")
    assert "CPU swap pool has 0 free blocks" in event.reason
    assert any('swap_fallback="recompute"' in line and line.startswith("pykv:") for line in report.log_lines)
    assert "PreemptionMode.RECOMPUTE" in caplog.text


def test_abort_fallback_uses_vllm_v0_message_and_aborts_only_the_victim(make_engine):
    engine = make_engine(
        block_size=4,
        num_gpu_blocks=6,
        max_num_seqs=3,
        vllm_profile="v0.6",
        preemption_mode="swap",
        num_cpu_blocks=1,
        swap_fallback="abort",
    )
    crowd(engine)
    report = run_until(engine, lambda r: r.preempted)
    (event,) = report.preempted
    assert event.mode == "abort"
    (aborted,) = [o for o in report.finished if o.request_id == event.request_id]
    assert aborted.finish_reason == "abort"
    assert aborted.message.startswith("Aborted due to the lack of CPU swap space. Please increase the swap space")
    drain_checked(engine)
    reasons = {o.request_id: o.finish_reason for o in engine.outputs.values()}
    aborted_ids = {e.request_id for e in engine.preemptions() if e.mode == "abort"}
    assert {rid for rid, reason in reasons.items() if reason == "abort"} == aborted_ids
    assert reasons["0"] == "length"  # the head of the running queue is never the victim
    assert_drained(engine)


def test_auto_mode_recomputes_single_sequence_requests(make_engine):
    engine = make_engine(
        block_size=4, num_gpu_blocks=6, max_num_seqs=3, vllm_profile="v0.6", preemption_mode="auto", num_cpu_blocks=16
    )
    crowd(engine)
    report = run_until(engine, lambda r: r.preempted)
    assert report.preempted[0].mode == "recompute" and report.preempted[0].fallback is None


def test_watermark_holds_back_swap_in_while_others_run(make_engine):
    # 10 blocks, watermark 50%: a swapped request returns only if 5 blocks stay free afterwards.
    engine = make_engine(
        block_size=4,
        num_gpu_blocks=10,
        max_num_seqs=3,
        vllm_profile="v0.6",
        preemption_mode="swap",
        num_cpu_blocks=16,
        watermark=0.5,
    )
    crowd(engine, n=3, prompt_len=8)
    run_until(engine, lambda r: r.preempted)
    for _ in range(200):
        if not engine.scheduler.swapped:
            break
        free_before = engine.kv.pool.num_free_blocks()
        running_before = bool(engine.scheduler.running)
        report = step_checked(engine)
        for cost in report.swapped_in:
            if running_before:
                assert free_before - cost.num_blocks >= 5
    assert not engine.scheduler.swapped, "still swapped after 200 steps"
    drain_checked(engine)
    assert_drained(engine)


def test_swap_without_a_cpu_pool_is_a_clear_error(make_engine):
    with pytest.raises(ValueError, match="needs a CPU swap pool"):
        make_engine(vllm_profile="v0.6", preemption_mode="swap")


def test_swap_under_a_v1_profile_names_the_profile_that_has_it(make_engine):
    for profile in ("v0.10", "v0.33"):
        with pytest.raises(
            ValueError,
            match=r"preemption_mode='swap' does not exist in vllm_profile='%s'.*"
            r"vllm_profile='v0.6'" % profile,
        ):
            make_engine(vllm_profile=profile, preemption_mode="swap", num_cpu_blocks=8)
        with pytest.raises(ValueError, match=r"num_cpu_blocks is not a knob of vllm_profile='%s'" % profile):
            make_engine(vllm_profile=profile, num_cpu_blocks=8)


def test_swap_space_in_gib_sizes_the_cpu_pool(make_engine):
    engine = make_engine(block_size=4, vllm_profile="v0.6", preemption_mode="swap", swap_space=0.001)
    assert engine.kv.cpu_pool.num_blocks == int(0.001 * 2**30) // engine.bytes_per_block


def mid_prefill_swap_run(make_engine, prompt_len, num_gpu_blocks=13):
    """oracle/cases.py's v0.6/swap_mid_prefill (exact against vLLM 0.6.3.post1): four decodes, and x swapped out at
    step 3 after the first 60 tokens of its prompt; d3 ends at step 5. Yields (engine, report) per step."""
    engine = make_engine(
        block_size=16,
        num_gpu_blocks=num_gpu_blocks,
        max_num_batched_tokens=64,
        vllm_profile="v0.6",
        preemption_mode="swap",
        num_cpu_blocks=64,
    )
    for rid, start, n, out in (("d0", 10, 15, 30), ("d1", 30, 10, 30), ("d2", 50, 10, 30), ("d3", 70, 10, 5)):
        engine.add_request(list(range(start, start + n)), SamplingParams(max_tokens=out, ignore_eos=True), rid)
    for _ in range(500):
        if not engine.has_unfinished_requests():
            break
        if engine.step_count == 1:
            engine.add_request(list(range(100, 100 + prompt_len)), SamplingParams(max_tokens=8, ignore_eos=True), "x")
        yield engine, step_checked(engine)
    assert_drained(engine)


def swapped_mid_prefill(make_engine, prompt_len, num_gpu_blocks=13):
    """Per step of ``mid_prefill_swap_run``: (chunks as (id, start, tokens), preempted ids, swapped-in ids)."""
    return [
        (
            [(c.request_id, c.start, c.num_new_tokens) for c in report.chunks],
            [p.request_id for p in report.preempted],
            [p.request_id for p in report.swapped_in],
        )
        for _, report in mid_prefill_swap_run(make_engine, prompt_len, num_gpu_blocks)
    ]


def test_v0_never_chunks_a_swap_in(make_engine):
    """vllm/core/scheduler.py (0.6.3.post1): _schedule_chunked_prefill calls _schedule_swapped(budget, curr_loras)
    without enable_chunking, so _get_num_new_tokens asks for every token x lacks (61) and budget.can_schedule fails
    while 4 decodes leave 60: x waits until d3 has finished, then comes back whole."""
    steps = swapped_mid_prefill(make_engine, prompt_len=121)
    assert steps[1][0][0] == ("x", 0, 60) and steps[2][1] == ["x"]
    assert not steps[3][2] and not steps[4][2]  # steps 4 and 5: 60 tokens left, 61 needed
    assert steps[5][0][0] == ("x", 60, 61) and steps[5][2] == ["x"]


def test_v0_swap_in_too_big_for_the_budget_is_chunked_once_nothing_else_runs(make_engine):
    """x swapped with 130 tokens left and a budget of 64 could never come back in vLLM 0.6.3 (it stays swapped for
    good); pykv waits as V0 does while anything runs, then brings it back in chunks."""
    steps = swapped_mid_prefill(make_engine, prompt_len=190, num_gpu_blocks=17)
    assert steps[1][0][0] == ("x", 0, 60) and steps[2][1] == ["x"]
    back = next(i for i, s in enumerate(steps) if "x" in s[2])
    assert back > 20 and all(c[0] != "x" for s in steps[3:back] for c in s[0])
    assert steps[back][0] == [("x", 60, 64)]  # alone in its step: nothing else was running


def test_a_chunked_swap_in_is_narrated_as_pykvs(make_engine):
    from pykv.viz.narration import narrate

    said = [
        line
        for engine, report in mid_prefill_swap_run(make_engine, prompt_len=190, num_gpu_blocks=17)
        for line in narrate(engine.snapshot(report))
        if "never chunks a swap-in" in line
    ]
    assert len(said) == 1 and said[0].startswith("req x came back with only part")
