"""Sweeps: documented columns, repeatable counts, exact bytes, the storm's shape, CSV round trip."""

import io

import pandas as pd
import pytest

from pykv import EngineConfig
from pykv.cli import main, parse_values
from pykv.sweep import RUN_COLUMNS, SweepSpec, run_sweep

COUNTS = ["preemptions", "recomputed_tokens", "swapped_bytes", "swap_copies", "output_tokens", "steps"]


@pytest.fixture
def base(random_llama_path):
    return EngineConfig(model=str(random_llama_path), block_size=4, history_size=0, log_stats_interval=10**9)


def small_spec(base, **changes):
    args = dict(workload="storm", workload_args={"n": 5, "max_tokens": 24}, values=(30, 40, 60),
                modes=("recompute", "swap", "swap per-block", "recompute+prefix"), base=base)
    return SweepSpec(**(args | changes))


def test_small_sweep_has_the_documented_columns_and_repeats_exactly(base, random_llama):
    first = run_sweep(small_spec(base), loaded=random_llama)
    assert list(first.runs.columns) == RUN_COLUMNS and len(first.runs) == 12
    assert (first.runs["device"] == "cpu").all()
    assert first.runs["preemptions"].sum() > 0
    second = run_sweep(small_spec(base), loaded=random_llama)
    pd.testing.assert_frame_equal(first.runs[COUNTS], second.runs[COUNTS])


def test_swapped_bytes_are_blocks_times_bytes_per_block(base, random_llama):
    result = run_sweep(small_spec(base, modes=("swap",)), loaded=random_llama)
    costs = result.preemptions
    bytes_per_block = 2 * 2 * 4 * 2 * 16 * 4  # layers * K/V * block_size * kv_heads * head_dim * fp32
    assert (costs["num_bytes"] % bytes_per_block == 0).all()
    per_run = costs.groupby("value")["num_bytes"].sum()
    runs = result.runs.set_index("value")["swapped_bytes"]
    assert (runs[per_run.index] == per_run).all()
    assert costs["modelled_pcie_gen5_s"].notna().all() and (costs["modelled_pcie_gen4_s"] > costs["modelled_pcie_gen5_s"]).all()


def test_storm_preempts_in_a_tight_pool_and_when_concurrency_exceeds_capacity(base, random_llama):
    pools = run_sweep(small_spec(base, modes=("recompute",), values=(32, 400)), loaded=random_llama).runs
    assert pools["preemptions"].iloc[0] > 0 and pools["preemptions"].iloc[-1] == 0  # tight vs ample
    assert (pools["output_tokens"] == 5 * 24).all()  # fixed-length outputs: the storm ignores EOS
    seqs = run_sweep(small_spec(base.replace(num_gpu_blocks=48), modes=("recompute",), axis="max_num_seqs",
                                values=(1, 5)), loaded=random_llama).runs
    assert seqs["preemptions"].iloc[0] == 0 and seqs["preemptions"].iloc[1] > 0


def test_block_size_axis_keeps_pool_capacity(base, random_llama):
    spec = small_spec(base.replace(num_gpu_blocks=16, block_size=8), axis="block_size", values=(2, 4, 8),
                      modes=("swap", "swap per-block"))
    runs = run_sweep(spec, loaded=random_llama).runs
    assert set(runs["num_gpu_blocks"] * runs["block_size"]) == {128}
    per_block = runs[runs["mode"] == "swap per-block"]
    batched = runs[runs["mode"] == "swap"]
    assert (per_block["swap_copies"].values >= batched["swap_copies"].values).all()


def test_runs_round_trip_through_csv(base, random_llama):
    runs = run_sweep(small_spec(base, values=(40,)), loaded=random_llama).runs
    back = pd.read_csv(io.StringIO(runs.to_csv(index=False)))
    pd.testing.assert_frame_equal(runs, back, check_dtype=False)


def test_cancel_stops_between_runs(base, random_llama):
    calls = []
    result = run_sweep(small_spec(base), loaded=random_llama, on_progress=lambda i, n, row: calls.append(i),
                       should_cancel=lambda: len(calls) >= 2)
    assert result.cancelled and len(result.runs) == 2


def test_bad_sweeps_are_messages(base):
    with pytest.raises(ValueError, match="Unknown modes"):
        SweepSpec(modes=("pause",), base=base)
    with pytest.raises(ValueError, match="positive integers"):
        SweepSpec(values=(0,), base=base)
    with pytest.raises(ValueError, match="start:stop:step"):
        parse_values("16-128")
    assert parse_values("16:64:16") == (16, 32, 48, 64)


def test_cli_sweep_writes_csv(random_llama_path, tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["sweep", "--model", str(random_llama_path), "--block-size", "4", "--pool-sizes", "30,60",
                 "--modes", "recompute,swap", "--num-requests", "4", "--max-tokens", "16", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "num_gpu_blocks" in text and "modelled" in text
    assert len(pd.read_csv(out)) == 4
