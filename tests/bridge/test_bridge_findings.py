"""Findings on the fixtures, fixes in each release's flags, the JSON contract, and baselines."""

import re
from pathlib import Path

from pykv.bridge import compare, diagnose, load_baseline, save_baseline
from pykv.bridge.base.release_guess import guess_release
from pykv.bridge.baseline import figures

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"
METRICS = FIXTURES / "v1_0_11_2_preemptions.metrics"  # the 0.11.2 storm's /metrics: what counts its preemptions


def findings(name):
    return {f.id: f for f in diagnose(FIXTURES / name).findings}


def test_v0_storm_with_swap_configured_but_only_recompute():
    found = findings("v0_4_3_preemption_storm.log")
    assert found["preemption_storm"].confidence == "high"
    fix = found["preemption_storm"].fix  # all RECOMPUTE: sizing swap would not help (swap_never_used says why)
    assert "--swap-space" not in fix
    assert fix.index("--gpu-memory-utilization") < fix.index("--max-num-seqs") < fix.index("--tensor-parallel-size")
    assert found["swap_never_used"].evidence[0] == "start-up: 2048 CPU blocks of swap space configured"


def test_swap_exhausted_cites_the_lines():
    found = findings("v0_6_3_post1_custom_format_swap.log")
    assert found["swap_space_exhausted"].evidence[0].startswith("line 6 (2024-12-20 15:18:10)")  # after 3 header lines


def test_a_v1_storm_is_likely_from_its_log_and_counted_from_its_metrics():
    """A V1 stats line counts no preemptions: the log alone shows the pattern (KV full, requests waiting, throughput
    falling), its /metrics count them."""
    likely = findings("v1_0_11_2_preemptions.log")["preemption_storm"]
    assert likely.title.startswith("Likely preemption storm") and likely.confidence == "medium"
    assert "vllm:num_preemptions_total" in likely.evidence[-1] and "fell" in likely.evidence[-2]
    counted = {f.id: f for f in diagnose([FIXTURES / "v1_0_11_2_preemptions.log", METRICS]).findings}
    storm = counted["preemption_storm"]
    assert storm.title == "Preemption storm: at least 600 preemptions with the KV cache full"
    assert storm.confidence == "high" and "vllm:num_preemptions_total" in storm.why
    assert storm.evidence[0] == "vllm:num_preemptions_total rose by 600 over the metrics read"
    assert "preemption_storm" not in findings("v1_0_33_0_format.log")  # KV far from full: no storm to guess


def test_v1_fix_has_no_swap_space_and_0_33_names_kv_offloading():
    storm = findings("v1_0_11_2_preemptions.log")["preemption_storm"]
    assert "--swap-space" not in storm.fix.replace("(V1 has no --swap-space)", "")
    assert "--kv-offloading-size" in storm.fix
    assert "--kv-offloading-backend native" in storm.fix  # 0.11.1 to 0.12: the size alone enables nothing
    from pykv.bridge.findings.fixes import step_text

    today = step_text("swap", guess_release({"v1_stats_engine"}, "0.33.0", "v1"))
    assert "--kv-offloading-size" in today and "--kv-offloading-backend" not in today  # native is the default
    old = guess_release({"v1_stats_engine", "prefix_bracketed"}, "0.8.5", None)
    from pykv.bridge.findings.fixes import step_text

    assert "no CPU KV tier" in step_text("swap", old)


def test_max_model_len_from_error_and_from_concurrency_below_one():
    assert findings("v0_0_4_3_max_seq_len_error.log")["max_model_len_exceeds_kv"].evidence == [
        "line 2: max_model_len 32768 > KV capacity 21024 tokens"
    ]
    assert "0.46x" in findings("v1_0_33_0_format.log")["max_model_len_exceeds_kv"].evidence[0]


def test_kv_not_the_bottleneck_when_waiting_with_kv_far_from_full():
    finding = findings("v1_0_10_2_apiserver_tags.log")["kv_not_the_bottleneck"]
    assert finding.confidence == "medium" and "waiting 30" in finding.evidence[0]


def test_prefix_hits_inflated_before_0_11_1_only():
    stats = (
        "INFO 05-01 09:00:{s:02d} [loggers.py:111] Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg "
        "generation throughput: {g:.1f} tokens/s, Running: 50 reqs, Waiting: 9 reqs, GPU KV cache usage: 99.0%, "
        "Prefix cache hit rate: 60.0%\n"
    )
    log = "".join(stats.format(s=i * 10, g=900.0 - i * 100) for i in range(4))
    metrics = "".join(f'vllm:num_preemptions_total{{engine="0"}} {n} {t}\n' for n, t in ((0, 1000), (30, 11000)))
    old = diagnose(
        ["INFO 05-01 08:59:00 [core.py:58] Initializing a V1 LLM engine (v0.10.2) with config: x\n" + log, metrics]
    )
    assert "prefix_hit_inflated_by_recompute" in {f.id for f in old.findings}
    new = diagnose(
        ["INFO 05-01 08:59:00 [core.py:58] Initializing a V1 LLM engine (v0.11.1) with config: x\n" + log, metrics]
    )
    assert "prefix_hit_inflated_by_recompute" not in {f.id for f in new.findings}


def test_json_contract_keys():
    result = diagnose(FIXTURES / "v0_6_3_post1_custom_format_swap.log").to_json_dict()
    assert set(result) == {
        "release",
        "engine",
        "startup",
        "samples",
        "preemptions_at_least",
        "findings",
        "lines_read",
        "lines_skipped",
    }
    assert set(result["findings"][0]) == {"id", "title", "confidence", "evidence", "fix"}
    assert result["findings"][0]["evidence"][0].startswith("confidence ")


def test_baseline_round_trip_and_verdict(tmp_path):
    log = FIXTURES / "v1_0_11_2_preemptions.log"
    before = diagnose([log, METRICS])
    path = tmp_path / "baseline.json"
    saved = save_baseline(before, path)
    assert saved["figures"]["preemptions_per_min"] == 720.0  # 600 in 50 s
    assert compare(before, load_baseline(path)).verdict.startswith("same as the baseline")
    calm = re.sub(r"(vllm:num_preemptions_total\{[^}]*\}) \S+", r"\1 0.0", METRICS.read_text())
    assert compare(diagnose([log, calm]), load_baseline(path)).verdict.startswith("better than the baseline")
    uncounted = figures(diagnose(log))  # the log alone counts nothing: no figure, never a zero
    assert uncounted["preemptions_per_min"] is None and uncounted["preemptions_at_least"] is None
