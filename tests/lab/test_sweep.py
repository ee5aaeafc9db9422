"""Sweeps: documented columns, repeatable counts, exact bytes, the storm's shape, CSV round trip."""

import dataclasses
import io

import pandas as pd
import pytest

from pykv import EngineConfig
from pykv.border.vllm_profiles import PROFILES
from pykv.cli.main import main
from pykv.engine.model.loader import load_model
from pykv.lab.sweep import PREEMPTION_COLUMNS, RUN_COLUMNS, StormShape, SweepSpec, parse_values, run_sweep, storm_shape

COUNTS = ["preemptions", "recomputed_tokens", "swapped_bytes", "swap_copies", "output_tokens", "steps"]


@pytest.fixture
def base(random_llama_path):
    return EngineConfig(model=str(random_llama_path), block_size=4)


def small_spec(base, **changes):
    args = dict(
        workload="storm",
        workload_args={"n": 5, "max_tokens": 24},
        values=(30, 40, 60),
        modes=("recompute", "swap", "swap per-block", "recompute+prefix"),
        base=base,
    )
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
    blocks = -(-costs["seq_len"] // 4)  # the victim's blocks: ceil(tokens / block_size)
    assert (costs["num_bytes"] == blocks * bytes_per_block).all()
    per_run = costs.groupby("value")["num_bytes"].sum()
    runs = result.runs.set_index("value")["swapped_bytes"]
    assert (runs[per_run.index] == per_run).all()
    assert costs["modelled_pcie_gen5_s"].notna().all()
    assert (costs["modelled_pcie_gen4_s"] > costs["modelled_pcie_gen5_s"]).all()


@pytest.mark.slow  # a sweep of the storm over pool sizes
def test_canonical_storm_never_preempts_less_in_a_smaller_pool(base, random_llama):
    """Every pool of the band, not a hand-picked few: recompute's count is exactly n - usable // blocks
    per request there (see StormShape), so shrinking the pool never lowers it."""
    base = base.replace(block_size=16)
    shape = storm_shape(SweepSpec(base=base), random_llama)  # SweepSpec's default workload: the canonical storm
    runs = run_sweep(SweepSpec(modes=("recompute",), values=tuple(shape.band), base=base), loaded=random_llama).runs
    counts = runs["preemptions"]
    assert list(counts) == [shape.recompute_preemptions(pool) for pool in shape.band]
    assert counts.is_monotonic_decreasing and counts.iloc[0] > 0 and counts.iloc[-1] == 0
    assert (runs["output_tokens"] == 8 * 96).all()  # fixed-length outputs: the storm ignores EOS


def test_max_num_seqs_past_what_the_pool_carries_raises_preemptions(base, random_llama):
    spec = SweepSpec(
        axis="max_num_seqs", values=tuple(range(1, 9)), base=base.replace(block_size=16, num_gpu_blocks=40)
    )
    shape = storm_shape(spec, random_llama)
    runs = run_sweep(spec, loaded=random_llama).runs
    for _, by_mode in runs.groupby("mode"):
        # swap runs under v0.6, which keeps no null block back; recompute under v0.33, which does
        null = PROFILES[by_mode["vllm_profile"].iloc[0]].null_block
        carried = dataclasses.replace(shape, null_blocks=int(null)).carried(40)
        counts = by_mode.set_index("value")["preemptions"]
        if not null:  # vLLM 0.6.3's append check wants a free block even for a decode into a partly filled one
            carried -= 1  # (can_append_slots, the oracle's v0.6 cases): a pool that is just full preempts
        assert (counts[counts.index <= carried] == 0).all()
        assert (counts[counts.index > carried + 1] > 0).all() and counts.is_monotonic_increasing


def test_the_shipped_models_storm_band():
    shape = storm_shape(SweepSpec(), load_model("tiny"))
    assert shape == StormShape(num_requests=8, prompt_blocks=2, blocks_per_request=8, null_blocks=1)  # v0.33
    assert shape.band == range(33, 66) and set(SweepSpec().values) - set(shape.band) == {24, 32}


def test_block_size_axis_keeps_pool_capacity(base, random_llama):
    spec = small_spec(
        base.replace(num_gpu_blocks=16, block_size=8),
        axis="block_size",
        values=(2, 4, 8),
        modes=("swap", "swap per-block"),
    )
    runs = run_sweep(spec, loaded=random_llama).runs
    assert set(runs["num_gpu_blocks"] * runs["block_size"]) == {128}
    per_block = runs[runs["mode"] == "swap per-block"]
    batched = runs[runs["mode"] == "swap"]
    assert (per_block["swap_copies"].values >= batched["swap_copies"].values).all()


def test_runs_and_preemptions_round_trip_through_csv(base, random_llama):
    result = run_sweep(small_spec(base, values=(30,)), loaded=random_llama)
    assert list(result.preemptions.columns) == PREEMPTION_COLUMNS and len(result.preemptions)
    for frame in (result.runs, result.preemptions):
        back = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
        pd.testing.assert_frame_equal(frame, back, check_dtype=False)


def test_cancel_stops_between_runs(base, random_llama):
    calls = []
    result = run_sweep(
        small_spec(base),
        loaded=random_llama,
        on_progress=lambda i, n, row: calls.append(i),
        should_cancel=lambda: len(calls) >= 2,
    )
    assert result.cancelled and len(result.runs) == 2


def test_bad_sweeps_are_messages(base):
    with pytest.raises(ValueError, match="Unknown modes"):
        SweepSpec(modes=("pause",), base=base)
    with pytest.raises(ValueError, match="positive integers"):
        SweepSpec(values=(0,), base=base)
    with pytest.raises(ValueError, match="start:stop:step"):
        parse_values("16-128")
    with pytest.raises(ValueError, match="gives no values"):
        parse_values("64:16:8")
    assert parse_values("16:64:16") == (16, 32, 48, 64) and parse_values("8, 4") == (8, 4)


def test_cli_sweep_writes_csv(random_llama_path, tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert (
        main(
            [
                "sweep",
                "--model",
                str(random_llama_path),
                "--block-size",
                "4",
                "--pool-sizes",
                "30,60",
                "--modes",
                "recompute,swap",
                "--num-requests",
                "4",
                "--max-tokens",
                "16",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "num_gpu_blocks" in text and "modelled" in text
    assert len(pd.read_csv(out)) == 4


def test_offload_mode_and_victim_policies_sweep_the_recompute_tax(base, random_llama):
    spec = small_spec(base, values=(30,), modes=("recompute", "recompute+offload"), policies=("last", "lcf"))
    runs = run_sweep(spec, loaded=random_llama).runs.set_index("mode")
    assert list(runs.index) == [
        "recompute · last",
        "recompute · lcf",
        "recompute+offload · last",
        "recompute+offload · lcf",
    ]
    assert (runs.loc["recompute+offload · last", ["vllm_profile", "preemption_victim"]] == ["v0.33", "last"]).all()
    assert runs.loc["recompute · last", "recompute_tax"] > 0 and runs.loc["recompute · last", "loaded_tokens"] == 0
    assert runs.loc["recompute+offload · last", "loaded_tokens"] > 0
    assert runs.loc["recompute+offload · last", "recompute_tax"] < runs.loc["recompute · last", "recompute_tax"]
    assert ((runs["recompute_tax"] >= 0) & (runs["recompute_tax"] <= 1)).all()
    with pytest.raises(ValueError, match="Unknown victim policies"):
        small_spec(base, policies=("youngest",))
