"""``python -m pykv sweep`` (issue 47): one release per comparison unless asked, every series named with its release,
repeats with their median and spread on both clocks, the machine's load, the CSV with every column."""

from __future__ import annotations

import pandas as pd

from pykv.cli.main import build_parser, main
from pykv.lab.sweep import DEFAULT_REPEATS, DEFAULT_VALUES, RUN_COLUMNS

SMALL = ["--block-size", "4", "--num-requests", "4", "--max-tokens", "16", "--pool-sizes", "60,90"]


def test_the_default_sweep_is_recompute_against_swap_under_v06():
    args = build_parser().parse_args(["sweep"])
    assert (args.vllm_profile, args.modes, args.repeats) == ("v0.6", "recompute,swap", DEFAULT_REPEATS)
    assert args.workload == "small_storm" and args.num_requests is None  # the preset's own sizes: 8 x 48
    assert args.pool_sizes is None and DEFAULT_VALUES == (20, 28, 36)


def test_cli_sweep_prints_counts_and_both_clocks_and_writes_every_column(random_llama_path, tmp_path, capsys):
    out = tmp_path / "r.csv"
    argv = ["sweep", "--model", str(random_llama_path), *SMALL, "--repeats", "2", "--out", str(out)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "recompute, vLLM 0.6.3 (V0)" in text and "swap, vLLM 0.6.3 (V0)" in text
    assert "cpu_s" in text and "wall_s" in text and "±cpu" in text
    assert "Counts are the same every repeat; each time is the median of 2 runs" in text
    assert "CPU time of the engine thread (time.thread_time)" in text and "load average (1 min)" in text
    assert "modelled" in text and "4 points x 2 repeats" in captured.err
    runs = pd.read_csv(out)
    assert list(runs.columns) == RUN_COLUMNS and len(runs) == 4 and (runs["repeats"] == 2).all()
    assert set(runs["vllm_profile"]) == {"v0.6"} and set(runs["engine"]) == {"V0"}
    assert (runs["cpu_s_lo"] <= runs["cpu_s"]).all() and (runs["cpu_s"] <= runs["cpu_s_hi"]).all()


def test_a_series_on_another_release_runs_only_when_asked(random_llama_path, capsys):
    argv = ["sweep", "--model", str(random_llama_path), *SMALL, "--repeats", "1", "--modes", "swap,recompute@v0.33"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: recompute@v0.33 would run on another release")
    assert "--compare-across-releases" in err
    assert main([*argv, "--compare-across-releases"]) == 0
    text = capsys.readouterr().out
    assert "swap, vLLM 0.6.3 (V0)" in text and "recompute, vLLM 0.33.0 (V1)" in text
