"""The real engine's case for a run of pykv's (case_for), why a config cannot be one (why_not), what to keep in mind
where pykv follows another release (caveat), and the nearest config it runs (runnable_config)."""

from __future__ import annotations

import pytest

from pykv.border.config import EngineConfig
from pykv.border.limits import MAX_STEPS
from pykv.border.workload import WorkloadRequest
from pykv.real_vllm import install
from pykv.real_vllm.case import case_for, caveat, runnable_config, shipped_model_dir, why_not


def config(**changes) -> EngineConfig:
    return EngineConfig(**({"block_size": 32, "num_gpu_blocks": 12, "vllm_profile": "v0.32"} | changes))


def request(rid: str = "0", **changes) -> WorkloadRequest:
    return WorkloadRequest(**({"prompt_token_ids": [5, 6, 7], "max_tokens": 4, "request_id": rid} | changes))


def test_the_installed_release_runs_a_config_like_for_like():
    assert install.PROFILE == "v0.32"
    assert why_not(config(), [request()]) is None and caveat(config()) is None and runnable_config(config()) is None


def test_case_for_names_the_knobs_as_the_driver_reads_them_and_keeps_pykvs_max_model_len():
    made = case_for(
        config(watermark=0.1, enable_prefix_caching=True, max_num_seqs=4),
        [request("a", arrival_step=3, ignore_eos=True), request("b", max_tokens=9)],
        max_model_len=352,
    )
    assert made["name"] == "playground" and made["max_steps"] == MAX_STEPS
    assert made["config"] == {
        "profile": "v0.32",
        "block_size": 32,
        "num_gpu_blocks": 12,
        "max_num_seqs": 4,
        "max_num_batched_tokens": 256,
        "max_model_len": 352,
        "enable_chunked_prefill": True,
        "enable_prefix_caching": True,
        "priority_scheduling": False,
        "watermark": 0.1,
    }
    assert made["requests"] == [
        {
            "request_id": "a",
            "prompt_token_ids": [5, 6, 7],
            "max_tokens": 4,
            "arrival_step": 3,
            "priority": 0,
            "n": 1,
            "ignore_eos": True,
        },
        {
            "request_id": "b",
            "prompt_token_ids": [5, 6, 7],
            "max_tokens": 9,
            "arrival_step": 0,
            "priority": 0,
            "n": 1,
            "ignore_eos": False,
        },
    ]


def test_priorities_go_only_where_priority_scheduling_reads_them():
    """vLLM refuses a request's priority under fcfs; pykv's `last` victim ignores it, so 0 is the same run."""
    fcfs = case_for(config(), [request(priority=3)], 100)
    assert fcfs["config"]["priority_scheduling"] is False and fcfs["requests"][0]["priority"] == 0
    ranked = case_for(config(preemption_victim="priority"), [request(priority=3)], 100)
    assert ranked["config"]["priority_scheduling"] is True and ranked["requests"][0]["priority"] == 3


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"vllm_profile": "v0.6", "block_size": 32}, "pykv follows vLLM 0.6.3.post1 (V0) here"),
        ({"vllm_profile": "v0.6", "block_size": 32}, "a different engine: choose the v0.32 profile"),
        ({"vllm_profile": "v0.10"}, "vLLM 0.10.2 (V1) here, and the real engine here is vLLM 0.32.0"),
        ({"block_size": 16}, "multiple of 32; this run has block_size=16: choose 32 or 64"),
        ({"block_size": 48}, "block_size=48"),
        ({"preemption_victim": "lcf"}, "preemption_victim=lcf is a proposal to vLLM, not vLLM's"),
        ({"preemption_victim": "sglang"}, "SGLang's retract order"),
        ({"num_offload_blocks": 16}, "The CPU offloading tier is not driven"),
        ({"model": "/nowhere/else"}, "shipped model only; this run uses '/nowhere/else'"),
    ],
)
def test_why_not_says_in_one_line_what_to_change(changes, words):
    reason = why_not(config(**changes))
    assert reason is not None and words in reason and "\n" not in reason


def test_swap_is_refused_with_the_reason_v1_has_none():
    swap = EngineConfig(vllm_profile="v0.6", block_size=32, preemption_mode="swap", num_cpu_blocks=8)
    assert "different engine" in (why_not(swap) or "")  # the engine first: V0 itself is not installed
    # EngineConfig refuses swap under a V1 profile; were a swap to reach why_not, its reason is still V1's
    unchecked = EngineConfig.model_construct(**(config().model_dump() | {"preemption_mode": "swap"}))
    assert "V1 has no swap: it always recomputes" in (why_not(unchecked) or "")


def test_parallel_sampling_is_refused_and_the_shipped_model_is_accepted_by_its_path():
    assert "Request x asks for n=3" in (why_not(config(), [request(), request("x", n=3)]) or "")
    assert why_not(config(model=str(shipped_model_dir()))) is None


def test_a_newer_profile_runs_with_a_caveat_naming_the_rules_that_differ():
    newer = config(vllm_profile="v0.33")
    assert why_not(newer) is None
    note = caveat(newer)
    assert note is not None and "pykv follows vLLM 0.33.0 here" in note and "vLLM 0.32.0" in note
    assert "scan_past_self_preemption" in note and "Choose the v0.32 profile" in note


def test_runnable_config_moves_to_the_installed_release_and_keeps_the_pools_tokens():
    fixed = runnable_config(EngineConfig(block_size=16, num_gpu_blocks=64))  # the defaults: v0.33, 16-token blocks
    assert fixed is not None and fixed.vllm_profile == "v0.32"
    assert (fixed.block_size, fixed.num_gpu_blocks) == (32, 32)  # 1024 tokens either way
    lcf = runnable_config(config(preemption_victim="lcf", block_size=48, num_gpu_blocks=10))
    assert lcf is not None and (lcf.preemption_victim, lcf.block_size, lcf.num_gpu_blocks) == ("last", 64, 8)
    assert runnable_config(config(model="/nowhere/else")) is None  # knobs cannot fix the model
