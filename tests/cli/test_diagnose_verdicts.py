"""`python -m pykv diagnose` as an on-call engineer reads it (issue 46, verdicts 1-5): a floor since start-up, what
a release cannot show, saturation as a finding, advice at the server's own values."""

from __future__ import annotations

from pathlib import Path

from pykv.cli.main import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"


def run(capsys, *names: str) -> str:
    assert main(["diagnose", *(str(FIXTURES / name) for name in names)]) == 0
    return capsys.readouterr().out


def test_one_scrape_is_at_least_its_counter_since_start_up(capsys):
    out = run(capsys, "v1_0_33_0_one_scrape.metrics")
    assert "preemptions: at least 4,821 since start-up (vllm:num_preemptions_total, read once" in out
    assert "finished requests account for 4,673" in out
    assert "[medium] preemption_storm: Preemption storm: at least 4,821 preemptions since start-up" in out
    assert "[high] chunked_prefill_rethrash" not in out


def test_an_old_release_says_not_visible_and_still_finds_the_storm(capsys):
    out = run(capsys, "v0_4_2_saturated.log")
    assert "preemptions: not visible in this release" in out and "at least 0" not in out
    assert "per 50" not in out and "vllm:num_preemptions_total" not in out
    assert "nothing here looks like KV-cache trouble" not in out
    assert "Likely preemption storm" in out and "running fell from 96 to 52 while waiting rose from 20 to 768" in out


def test_vllms_own_warning_is_never_nothing(capsys):
    out = run(capsys, "v0_6_3_post1_one_warning.log")
    assert "nothing here looks like KV-cache trouble" not in out
    assert "Preemptions with the KV cache full: at least 1 preemption" in out
    assert "size --swap-space" not in out  # swap_never_used says why it would not help


def test_advice_at_the_servers_own_values(capsys):
    out = run(capsys, "v1_0_10_2_saturated.log")
    assert "raise your --gpu-memory-utilization 0.85 -> 0.90-0.95" in out
    assert "lower --max-num-seqs from 128 to about 52" in out
    assert "0.90 -> 0.95" not in out and "0.92 -> 0.95" not in out  # never the release default beside its value


def test_the_review_pack_says_it_too(tmp_path, capsys):
    out = tmp_path / "pack.html"
    assert main(["diagnose", str(FIXTURES / "v0_4_2_saturated.log"), "--out", str(out)]) == 0
    page = out.read_text()
    assert "Preemptions: not visible in this release" in page and "At least 0" not in page
