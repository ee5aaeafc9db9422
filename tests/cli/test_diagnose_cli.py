"""`python -m pykv diagnose`: the --json contract, one error line when nothing is usable, baselines, the replay."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pykv.border.workload import Workload
from pykv.cli.main import main
from pykv.review_pack.page import plotly_js

EXAMPLES = Path(__file__).parents[2] / "pykv" / "bridge" / "examples"
STORM = str(EXAMPLES / "v1-0.33-preemption-storm.log")
STORM_METRICS = str(EXAMPLES / "v1-0.33-preemption-storm.metrics")  # what counts the V1 log's preemptions
CONTRACT = {
    "release",
    "engine",
    "startup",
    "samples",
    "preemptions_at_least",
    "findings",
    "lines_read",
    "lines_skipped",
}


def test_json_follows_the_contract(capsys):
    assert main(["diagnose", STORM, STORM_METRICS, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert set(body) == CONTRACT and body["engine"] == "v1" and body["preemptions_at_least"] == 476
    assert body["startup"][0]["kv_cache_tokens"] == 180_000 and body["startup"][0]["max_concurrency"] == 21.97
    sample = body["samples"][6]  # the log's: its stats line counts no preemptions
    assert 0 <= sample["gpu_kv_usage"] <= 1 and sample["running"] == 128 and sample["preemptions"] is None
    storm = body["findings"][0]
    assert storm["id"] == "preemption_storm" and "--kv-offloading-size" in storm["fix"]
    assert storm["title"] == "Preemption storm: at least 476 preemptions with the KV cache full"


def test_a_v1_log_alone_says_its_preemptions_are_not_counted(capsys):
    assert main(["diagnose", STORM]) == 0
    out = capsys.readouterr().out
    assert "preemptions: not counted" in out and "vllm:num_preemptions_total" in out
    assert "Likely preemption storm" in out and "at least 0" not in out


def test_nothing_usable_is_one_error_line_and_exit_2(tmp_path, capsys):
    junk = tmp_path / "notes.txt"
    junk.write_text("shopping list\nmilk\n")
    assert main(["diagnose", str(junk)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "vLLM" in err[0]
    assert main(["diagnose"]) == 2 and "give at least one file" in capsys.readouterr().err


def test_a_baseline_is_saved_and_compared(tmp_path, capsys):
    base = tmp_path / "before.json"
    assert main(["diagnose", str(EXAMPLES / "v0-preemption-storm.log"), "--save-baseline", str(base)]) == 0
    assert json.loads(base.read_text())["figures"]["preemptions_at_least"] == 151
    capsys.readouterr()
    assert main(["diagnose", STORM, STORM_METRICS, "--baseline", str(base)]) == 0
    verdict = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("baseline "))
    assert "worse than the baseline" in verdict or "mixed" in verdict or "better" in verdict
    bad = tmp_path / "bad.json"
    bad.write_text('{"baseline_version": 1, "figures": {"mean_gen_tps": "fast"}}')
    assert main(["diagnose", STORM, "--baseline", str(bad)]) == 2
    assert "not a number" in capsys.readouterr().err


def test_the_replay_workload_runs_with_the_printed_command(tmp_path, capsys):
    out = tmp_path / "replay.json"
    assert main(["diagnose", STORM, "--replay-out", str(out)]) == 0
    printed = capsys.readouterr().out
    command = next(line.strip() for line in printed.splitlines() if "run it:" in line)
    assert f"--workload {out}" in command and "--max-num-seqs 12" in command
    workload = Workload.load(out)
    assert len(workload.requests) == 19


def test_the_review_pack_of_a_server_is_one_offline_page(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["diagnose", STORM, STORM_METRICS, "--out", str(out)]) == 0
    page = out.read_text()
    for section in ('id="server"', 'id="server-timeline"', 'id="findings"', 'id="replay"'):
        assert section in page
    assert "Preemption storm" in page and "What the scaling keeps" not in page  # the pack's own wording
    rest = page.replace(plotly_js(), "")  # plotly.js is embedded once; nothing else names a host
    assert page.count(plotly_js()) == 1 and not re.search(r"(?i)https?://|@import|@font-face|cdn\.", rest)
