"""A real server's pressure replayed in the lab (pykv.lab.server_replay) and the what-if beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykv.bridge import diagnose
from pykv.gpu_model import Target
from pykv.lab.server_replay import plan_replay, profile_for
from pykv.lab.what_if import lab_fix, suggested_fixes, what_if

EXAMPLES = Path(__file__).parents[2] / "pykv" / "bridge" / "examples"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"
VOCAB = 512


def mooncake(rows: list[tuple[int, int, int, list[int]]]) -> bytes:
    lines = [f'{{"timestamp": {t}, "input_length": {i}, "output_length": {o}, "hash_ids": {h}}}' for t, i, o, h in rows]
    return ("\n".join(lines) + "\n").encode()


def test_a_v1_storm_replays_on_v033_with_the_servers_pressure():
    d = diagnose(str(EXAMPLES / "v1-0.33-preemption-storm.log"))
    plan = plan_replay(d, VOCAB)
    assert plan.config.vllm_profile == "v0.33" and plan.config.block_size == 16
    assert plan.pressure.rho == pytest.approx(2 * 0.999)  # no trace: twice the peak KV usage
    assert plan.lab_rho == pytest.approx(plan.pressure.rho, rel=0.05)  # the pool keeps the pressure
    assert plan.config.max_num_seqs == 12 and len(plan.workload.requests) == 12 + 7  # 128 + 72 scaled to 12 + 7
    assert all(max(r.prompt_token_ids) < VOCAB and r.ignore_eos for r in plan.workload.requests)
    assert any("assumed" in k for k in plan.keeps) and any("twice" in c for c in plan.cannot_keep)


def test_a_v0_log_replays_on_v06_with_its_swap_pool_in_proportion():
    d = diagnose(str(FIXTURES / "v0_4_3_preemption_storm.log"))
    assert profile_for(d)[0] == "v0.6"
    plan = plan_replay(d, VOCAB)
    c = plan.config
    assert c.preemption_mode == "auto" and c.num_cpu_blocks == c.num_gpu_blocks  # 2048 GPU : 2048 CPU blocks


def test_a_trace_gives_lengths_arrivals_and_shared_prefix_blocks():
    trace = mooncake(
        [
            (0, 3000, 1000, [1, 2, 3]),
            (0, 3000, 1000, [1, 2, 4]),
            (5000, 3000, 1000, [7, 8, 9]),
            (60000, 3000, 1000, [1, 2, 5]),
        ]
    )
    log = (FIXTURES / "v1_0_33_0_format.log").read_bytes()  # 60,000 KV tokens, one running request
    d = diagnose([log, trace])
    plan = plan_replay(d, VOCAB)
    assert plan.pressure.mean_input_tokens == 3000 and plan.pressure.mean_output_tokens == 1000
    prompts = [r.prompt_token_ids for r in plan.workload.requests]
    steps = [r.arrival_step for r in plan.workload.requests]
    assert steps[0] == 0 and steps[-1] == 60 and steps == sorted(steps)  # the trace's span on 60 steps
    assert plan.workload.requests[0].max_tokens == 24  # 96 tokens split 3000:1000
    if len(prompts) > 1:  # requests with equal leading hash ids share their leading lab blocks
        assert prompts[0][:16] == prompts[1][:16]


def test_each_fix_changes_the_knob_the_tuning_step_names():
    d = diagnose(str(EXAMPLES / "v1-0.33-preemption-storm.log"))
    plan = plan_replay(d, VOCAB)
    fixes = suggested_fixes(d, plan)
    assert [f.step for f in fixes] == ["gpu_memory", "max_num_seqs"]  # the storm's first steps, in order
    assert fixes[0].changes["num_gpu_blocks"] > plan.config.num_gpu_blocks
    assert lab_fix("swap", plan.config).changes == {"num_offload_blocks": 2 * plan.config.num_gpu_blocks}
    assert lab_fix("swap", plan.config.replace(vllm_profile="v0.10")) is None  # 0.10 has no CPU tier


def test_the_what_if_runs_the_replay_and_each_fix_to_completion(random_llama):
    d = diagnose(str(EXAMPLES / "v1-0.33-preemption-storm.log"))
    plan = plan_replay(d, random_llama.config.vocab_size)
    fixes = suggested_fixes(d, plan)
    before, *after = what_if(plan, fixes, random_llama, Target())
    assert before.done and all(o.done for o in after)
    assert before.preemptions > 0  # the replay preempts, as the server did
    assert after[1].preemptions < before.preemptions  # half the batch: fewer preemptions
    assert before.modelled_tokens_per_s > 0 and "modelled" in before.target_label
