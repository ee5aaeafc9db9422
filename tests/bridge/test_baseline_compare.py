"""Verdict 8: a baseline comparison never gives a false all-clear. A figure missing on either side is "not
comparable: <what>", a floor since start-up is never compared as a rate, a different release / engine / model is
said, the config changes and the findings that went away or appeared are listed, and no internal key or raw float
reaches what a person reads."""

from __future__ import annotations

import re

from pykv.bridge import compare
from pykv.bridge.base.records import Sample, ServerConfig
from pykv.bridge.base.release_guess import ReleaseGuess
from pykv.bridge.baseline import baseline_body, parse_baseline
from pykv.bridge.baseline.store import baseline_bytes
from pykv.bridge.diagnosis import Diagnosis
from pykv.bridge.findings.evidence import Finding

V1 = ReleaseGuess("0.33.0 (printed by the server)", "v1", "0.33.0", "0.33.0", exact=True)
V0 = ReleaseGuess("V0, 0.4.3-0.6.3.post1", "v0", "0.4.3", "0.6.3.post1")


def finding(id_: str, title: str) -> Finding:
    return Finding(id_, title, "high", "seen", [], "fix it")


def storm(**config) -> Diagnosis:
    """A log with a window: 600 preemptions over 10 minutes, throughput 1,234.567 tokens/s, KV 97%."""
    samples = [
        Sample(seconds=60.0 * i, running=100, waiting=20, gpu_kv_usage=0.97123, gen_tps=1234.567, preemptions=60)
        for i in range(11)
    ]
    cfg = ServerConfig(max_num_seqs=256, gpu_memory_utilization=0.85, **config)
    return Diagnosis(V1, [], samples, 600, [finding("preemption_storm", "Preemption storm")], cfg, 11, 0)


def single_scrape(count: int = 4821) -> Diagnosis:
    """One /metrics scrape: the counter read once (a floor since start-up), no throughput, no time span."""
    samples = [Sample(seconds=None, running=64, waiting=23, gpu_kv_usage=0.987, line=1)]
    return Diagnosis(V1, [], samples, count, [], ServerConfig(max_num_seqs=256), 30, 0)


def saved(d: Diagnosis) -> dict:
    return parse_baseline(baseline_bytes(baseline_body(d)))


def readable(text: str) -> None:
    assert not re.search(r"\b[a-z]+_[a-z_]+\b", text), f"an internal name in {text!r}"
    assert not re.search(r"\d\.\d{3,}", text), f"a raw float in {text!r}"


def test_a_missing_rate_and_throughput_are_not_comparable_never_the_same():
    result = compare(single_scrape(), saved(storm()))
    assert not result.verdict.startswith("same")
    assert "not comparable" in result.verdict
    assert "this input counts at least 4,821 preemptions since start-up (a floor, not a rate)" in result.verdict
    assert "this input has no generation throughput" in result.verdict
    readable(result.verdict)


def test_the_baseline_lacking_a_figure_is_not_comparable_either():
    result = compare(storm(), saved(single_scrape()))
    assert result.verdict.startswith("not comparable") or "not comparable" in result.verdict
    assert "the baseline counts at least 4,821 preemptions since start-up (a floor, not a rate)" in result.verdict
    assert "same as the baseline" not in result.verdict


def test_same_only_when_every_judged_figure_is_on_both_sides():
    result = compare(storm(), saved(storm()))
    assert (
        result.verdict == "same as the baseline (within 10%) on preemptions per minute and generation throughput (mean)"
    )


def test_floors_are_never_compared_as_rates():
    result = compare(single_scrape(9000), saved(single_scrape(10)))
    assert "better" not in result.verdict and "worse" not in result.verdict
    counted = next(r for r in result.rows if r.label == "preemptions counted")
    assert (counted.baseline, counted.now) == (
        "at least 10 since start-up (a count, not a rate)",
        "at least 9,000 since start-up (a count, not a rate)",
    )


def test_rows_are_labelled_and_formatted():
    result = compare(storm(), saved(storm()))
    rate = next(r for r in result.rows if r.label == "preemptions per minute")
    assert (rate.baseline, rate.change) == ("60.0 per minute", "within 10%")
    tps = next(r for r in result.rows if r.label == "generation throughput (mean)")
    assert tps.now == "1,235 tokens/s"
    kv = next(r for r in result.rows if r.label == "GPU KV cache usage (mean)")
    assert kv.now == "97.1%"
    for line in result.lines():
        readable(line.replace("--", "").split(": ", 1)[-1])


def test_different_release_engine_and_model_are_said():
    old = storm(model="Qwen/Qwen2.5-14B-Instruct")
    old.release = V0
    result = compare(storm(model="meta-llama/Llama-3.1-8B-Instruct"), saved(old))
    joined = " | ".join(result.warnings)
    assert "different engines: the baseline ran vLLM's V0 engine, this server V1" in joined
    assert "different releases: the baseline is vLLM V0, 0.4.3-0.6.3.post1, this server 0.33.0" in joined
    assert "different models: the baseline served Qwen/Qwen2.5-14B-Instruct, this server meta-llama" in joined
    assert compare(storm(), saved(storm())).warnings == []


def test_config_changes_and_findings_gone_and_new_are_listed():
    before = storm(swap_space_gib=4.0)
    before.findings.append(finding("swap_never_used", "Swap space configured, never used"))
    after = storm(swap_space_gib=0.0, enable_prefix_caching=True)
    after.config.max_num_seqs = 128
    after.findings = [finding("prefix_cache_not_hitting", "Prefix caching on, not hitting")]
    result = compare(after, saved(before))
    assert result.config_changes == [
        "--max-num-seqs 256 -> 128",
        "--swap-space (GiB) 4 -> 0",
        "--enable-prefix-caching not read -> on",
    ]
    assert result.findings_gone == ["Preemption storm", "Swap space configured, never used"]
    assert result.findings_new == ["Prefix caching on, not hitting"]


def test_a_baseline_saved_before_titles_still_names_findings_in_words():
    old = saved(storm())
    del old["finding_titles"], old["release_range"], old["model"]
    result = compare(single_scrape(), old)
    assert result.findings_gone == ["preemption storm"]


def test_a_log_with_one_scrape_is_a_floor_not_a_windows_rate():
    """The log spans 1.8 minutes, the counter was read once: its count is since start-up, not the log's window."""
    from pathlib import Path

    from pykv.bridge import diagnose
    from pykv.bridge.baseline import figures

    log = Path(__file__).parents[2] / "pykv" / "bridge" / "examples" / "v1-0.33-preemption-storm.log"
    one = b'vllm:num_preemptions_total{model_name="m"} 4821.0\nvllm:num_requests_running{model_name="m"} 64.0\n'
    d = diagnose([log.read_bytes(), one])
    assert figures(d)["preemptions_per_min"] is None and figures(d)["preemptions_since_start"]
    result = compare(d, saved(storm()))
    assert "preemptions per minute" not in result.verdict  # judged on throughput alone, the rest said not comparable
    assert "not comparable: this input counts at least" in result.verdict
