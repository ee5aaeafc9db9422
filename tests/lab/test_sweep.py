"""Sweeps: documented columns, repeatable counts, exact bytes, the storm's shape, CSV round trip; series under one
release unless asked (issue 47), repeats as a median with its spread, the engine thread's CPU time beside wall time."""

import dataclasses
import io
import re
import time

import pandas as pd
import pytest

from pykv import EngineConfig
from pykv.border.timing_measures import TIMED_COLUMNS, twin
from pykv.border.vllm_profiles import PROFILES
from pykv.border.workload import make_workload, preset_defaults
from pykv.engine.model.loader import load_model
from pykv.lab.completed_run import run_to_completion
from pykv.lab.sweep import (
    DEFAULT_PROFILE,
    PREEMPTION_COLUMNS,
    RUN_COLUMNS,
    Series,
    StormShape,
    SweepSpec,
    band_applies,
    parse_values,
    run_point,
    run_sweep,
    storm_shape,
)
from pykv.lab.sweep.repeats import merge_costs, merge_runs

COUNTS = ["preemptions", "recomputed_tokens", "swapped_bytes", "swap_copies", "output_tokens", "steps"]


@pytest.fixture
def base(random_llama_path):
    return EngineConfig(model=str(random_llama_path), block_size=4, vllm_profile="v0.6")


def small_spec(base, **changes):
    args = dict(
        workload="storm",
        workload_args={"n": 5, "max_tokens": 24},
        values=(40, 60, 90),
        modes=("recompute", "swap", "swap per-block", "recompute+prefix"),
        base=base,
        repeats=1,
    )
    return SweepSpec(**(args | changes))


def test_small_sweep_has_the_documented_columns_and_repeats_exactly(base, random_llama):
    first = run_sweep(small_spec(base), loaded=random_llama)
    assert list(first.runs.columns) == RUN_COLUMNS and len(first.runs) == 12
    assert (first.runs["device"] == "cpu").all()
    assert first.runs["preemptions"].sum() > 0
    second = run_sweep(small_spec(base), loaded=random_llama)
    pd.testing.assert_frame_equal(first.runs[COUNTS], second.runs[COUNTS])


def test_the_default_sweep_compares_modes_under_one_release():
    spec = SweepSpec()
    assert spec.base.vllm_profile == DEFAULT_PROFILE == "v0.6" and PROFILES["v0.6"].swaps  # it has both
    assert spec.workload == "small_storm" and spec.workload_args == {"n": 8, "max_tokens": 48}
    assert spec.profiles == ("v0.6",) and spec.repeats >= 3
    assert [p.label for p in spec.configs()[:2]] == ["recompute, vLLM 0.6.3 (V0)", "swap, vLLM 0.6.3 (V0)"]
    assert {p.config.vllm_profile for p in spec.configs()} == {"v0.6"}


def test_every_row_names_its_release_and_engine(base, random_llama):
    spec = small_spec(
        base, values=(60,), modes=("recompute", "swap", "recompute@v0.33"), across_releases=True, policies=("last",)
    )
    runs = run_sweep(spec, loaded=random_llama).runs.set_index("series")
    assert list(runs.index) == [
        "recompute, vLLM 0.6.3 (V0)",
        "swap, vLLM 0.6.3 (V0)",
        "recompute, vLLM 0.33.0 (V1)",
    ]
    assert list(runs["vllm_profile"]) == ["v0.6", "v0.6", "v0.33"] and list(runs["engine"]) == ["V0", "V0", "V1"]
    assert list(runs["vllm_release"]) == ["0.6.3.post1", "0.6.3.post1", "0.33.0"]
    assert list(runs["mode"]) == ["recompute", "swap", "recompute"]


@pytest.mark.parametrize(
    "modes, profile, words",
    [
        (("recompute", "recompute@v0.33"), "v0.6", "tick Compare across releases"),  # mixing, not asked for
        (("swap",), "v0.33", "swap is not in vLLM 0.33.0 (V1), which always recomputes"),  # no silent move to V0
        (("recompute+offload",), "v0.6", "add it as recompute+offload@v0.33"),
        (("auto",), "v0.10", "auto is not in vLLM 0.10.2 (V1)"),
        (("recompute@v9",), "v0.6", "names no release"),
        (("recompute", "recompute@v0.6"), "v0.6", "listed twice"),
        (("pause",), "v0.6", "Unknown modes"),
    ],
)
def test_a_sweep_that_mixes_releases_or_lacks_a_mode_is_refused_in_one_line(base, modes, profile, words):
    with pytest.raises(ValueError, match=re.escape(words)) as caught:
        SweepSpec(modes=modes, base=base.with_profile(profile)[0])
    assert "\n" not in str(caught.value)


def test_series_on_other_releases_run_when_asked():
    spec = SweepSpec(
        modes=("recompute", "swap", "auto", "recompute@v0.33", "recompute+offload@v0.33"), across_releases=True
    )
    assert spec.profiles == ("v0.6", "v0.33")
    assert spec.series[3] == Series("recompute", "v0.33") and spec.series[3].spelled == "recompute@v0.33"
    offload = [p for p in spec.configs() if p.series.mode == "recompute+offload"][0]
    assert offload.config.vllm_profile == "v0.33" and offload.config.num_offload_blocks == 4 * offload.value
    auto = [p for p in spec.configs() if p.series.mode == "auto"][0]
    assert auto.config.preemption_mode == "auto" and auto.config.num_cpu_blocks == 4 * auto.value


def test_repeats_give_a_median_with_its_spread_and_the_same_counts(base, random_llama):
    spec = small_spec(base, values=(60,), modes=("recompute", "swap"), repeats=3)
    result = run_sweep(spec, loaded=random_llama)
    runs = result.runs
    assert list(runs["repeats"]) == [3, 3]
    for column in TIMED_COLUMNS:
        assert (runs[f"{column}_lo"] <= runs[column]).all() and (runs[column] <= runs[f"{column}_hi"]).all(), column
    assert (runs["cpu_s"] > 0).all() and (runs["cpu_s_hi"] > runs["cpu_s_lo"]).all()  # three different timings
    recompute = runs.set_index("mode").loc["recompute"]
    assert recompute["recompute_cpu_s"] > 0 and recompute["swap_cpu_s"] == 0
    costs = result.preemptions
    assert (
        (costs["measured_cpu_s_lo"] <= costs["measured_cpu_s"])
        & (costs["measured_cpu_s"] <= costs["measured_cpu_s_hi"])
    ).all()
    assert runs["load_1m"].notna().all()  # the machine's load when each point ran (Linux)


def test_merge_takes_the_median_and_refuses_counts_that_differ():
    rows = [
        dict.fromkeys(
            ["preemptions", "recomputed_tokens", "swapped_bytes", "swap_copies", "loaded_tokens", "output_tokens"], 1
        )
        | {c: v for c in TIMED_COLUMNS}
        | {"ttft_p50_s": v, "ttft_p95_s": v, "tpot_p50_s": v, "tpot_p95_s": v}
        for v in (3.0, 1.0, 2.0)
    ]
    merged = merge_runs(rows, "x")
    assert (merged["wall_s"], merged["wall_s_lo"], merged["wall_s_hi"], merged["repeats"]) == (2.0, 1.0, 3.0, 3)
    rows[1]["preemptions"] = 2
    with pytest.raises(RuntimeError, match="repeat 2 counted preemptions=2, repeat 1 1"):
        merge_runs(rows, "x")
    costs = [[{"step": 4, "request_id": "a", "measured_s": v, "measured_cpu_s": v / 2}] for v in (1.0, 5.0, 2.0)]
    (cost,) = merge_costs(costs, "x")
    assert (cost["measured_s"], cost["measured_s_lo"], cost["measured_s_hi"], cost["measured_cpu_s"]) == (
        2.0,
        1.0,
        5.0,
        1.0,
    )
    with pytest.raises(RuntimeError, match="preempted other requests"):
        merge_costs([costs[0], [{"step": 5, "request_id": "a", "measured_s": 1.0, "measured_cpu_s": 1.0}]], "x")


def test_the_engine_threads_cpu_time_is_recorded_beside_wall_time(base, random_llama):
    """A sleep in the engine thread is wall time, not CPU time: the CPU clock leaves out what a busy machine adds."""
    config = base.replace(num_gpu_blocks=60, preemption_mode="recompute")
    loaded = random_llama
    original = loaded.model.forward

    def slow_forward(*args, **kwargs):
        time.sleep(0.002)  # as if another process held the CPU
        return original(*args, **kwargs)

    loaded.model.forward = slow_forward
    try:
        run = run_to_completion(config, make_workload("storm", n=5, max_tokens=24), loaded)
    finally:
        del loaded.model.forward
    totals = run.totals()
    assert totals.recomputed_tokens > 0
    assert 0 < totals.cpu_s < totals.wall_s - 0.002 * totals.steps * 0.9  # the sleeps are in wall time only
    assert 0 < totals.recompute_cpu_s < totals.recompute_s
    assert totals.tokens_per_cpu_s > totals.tokens_per_s
    recovered = [r for r in run.engine.preemptions() if r.recovered_step is not None]
    assert recovered and all(0 < r.recompute_cpu_s < r.recompute_s for r in recovered)


def test_swap_copies_record_their_cpu_time(base, random_llama):
    point = small_spec(base, values=(60,), modes=("swap",)).configs()[0]
    row, costs = run_point(small_spec(base, values=(60,), modes=("swap",)), point, random_llama)
    assert row["swap_cpu_s"] > 0 and costs and all(c["measured_cpu_s"] > 0 for c in costs)


def test_twin_columns_name_the_cpu_clock():
    assert [twin(c, "cpu") for c in ("wall_s", "tokens_per_s", "recompute_s", "measured_s")] == [
        "cpu_s",
        "tokens_per_cpu_s",
        "recompute_cpu_s",
        "measured_cpu_s",
    ]
    assert set(TIMED_COLUMNS) <= set(RUN_COLUMNS)


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
    per request there (see StormShape), so shrinking the pool never lowers it. V1's rule (v0.33)."""
    base = base.replace(block_size=16).with_profile("v0.33")[0]
    assert band_applies("v0.33") and not band_applies("v0.6")
    shape = storm_shape(SweepSpec(base=base, modes=("recompute",)), random_llama)  # the small storm: 8 x 48
    spec = SweepSpec(modes=("recompute",), values=tuple(shape.band), base=base, repeats=1)
    runs = run_sweep(spec, loaded=random_llama).runs
    counts = runs["preemptions"]
    assert list(counts) == [shape.recompute_preemptions(pool) for pool in shape.band]
    assert counts.is_monotonic_decreasing and counts.iloc[0] > 0 and counts.iloc[-1] == 0
    assert (runs["output_tokens"] == 8 * 48).all()  # fixed-length outputs: the storm ignores EOS


def test_max_num_seqs_past_what_the_pool_carries_raises_preemptions(base, random_llama):
    spec = SweepSpec(
        axis="max_num_seqs",
        values=tuple(range(1, 9)),
        base=base.replace(block_size=16, num_gpu_blocks=40),
        modes=("swap", "recompute@v0.33"),
        across_releases=True,
        repeats=1,
    )
    shape = storm_shape(spec, random_llama)
    runs = run_sweep(spec, loaded=random_llama).runs
    for _, by_series in runs.groupby("series"):
        # swap runs under v0.6, which keeps no null block back; recompute here under v0.33, which does
        null = PROFILES[by_series["vllm_profile"].iloc[0]].null_block
        carried = dataclasses.replace(shape, null_blocks=int(null)).carried(40)
        counts = by_series.set_index("value")["preemptions"]
        if not null:  # vLLM 0.6.3's append check wants a free block even for a decode into a partly filled one
            carried -= 1  # (can_append_slots, the oracle's v0.6 cases): a pool that is just full preempts
        assert (counts[counts.index <= carried] == 0).all()
        assert (counts[counts.index > carried + 1] > 0).all() and counts.is_monotonic_increasing


def test_the_shipped_models_small_storm_band():
    model = load_model("tiny")
    v1 = storm_shape(SweepSpec(base=EngineConfig(vllm_profile="v0.33"), modes=("recompute",)), model)
    assert v1 == StormShape(num_requests=8, prompt_blocks=2, blocks_per_request=5, null_blocks=1)
    assert v1.band == range(21, 42)  # 8 x 48 tokens: 5 blocks each, 40 usable carry all
    assert storm_shape(SweepSpec(), model) == dataclasses.replace(v1, null_blocks=0)  # v0.6 keeps no null block
    assert storm_shape(SweepSpec(workload="burst"), model) is None


def test_a_preset_means_the_same_requests_everywhere():
    """Issue 47: the Playground's storm and the Sweep's default are two presets with two names."""
    assert preset_defaults("storm") == {"n": 12, "max_tokens": 128}
    assert preset_defaults("small_storm") == {"n": 8, "max_tokens": 48}
    assert SweepSpec(workload="storm").workload_args == preset_defaults("storm")  # no hidden resize
    small, big = make_workload("small_storm", n=12, max_tokens=128), make_workload("storm")
    assert [r.model_dump() for r in small.requests] == [r.model_dump() for r in big.requests]


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
    result = run_sweep(small_spec(base, values=(60,)), loaded=random_llama)
    assert list(result.preemptions.columns) == PREEMPTION_COLUMNS and len(result.preemptions)
    for frame in (result.runs, result.preemptions):
        back = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
        pd.testing.assert_frame_equal(frame, back, check_dtype=False)


def test_cancel_stops_between_points(base, random_llama):
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
    with pytest.raises(ValueError, match="repeats must be a whole number from 1 to 9"):
        SweepSpec(repeats=0, base=base)
    with pytest.raises(ValueError, match="start:stop:step"):
        parse_values("16-128")
    with pytest.raises(ValueError, match="gives no values"):
        parse_values("64:16:8")
    assert parse_values("16:64:16") == (16, 32, 48, 64) and parse_values("8, 4") == (8, 4)


def test_offload_mode_and_victim_policies_sweep_the_recompute_tax(base, random_llama):
    spec = small_spec(
        base.with_profile("v0.33")[0], values=(60,), modes=("recompute", "recompute+offload"), policies=("last", "lcf")
    )
    runs = run_sweep(spec, loaded=random_llama).runs.set_index("series")
    assert list(runs.index) == [
        "recompute · last, vLLM 0.33.0 (V1)",
        "recompute · lcf, vLLM 0.33.0 (V1)",
        "recompute+offload · last, vLLM 0.33.0 (V1)",
        "recompute+offload · lcf, vLLM 0.33.0 (V1)",
    ]
    offload = runs.loc["recompute+offload · last, vLLM 0.33.0 (V1)"]
    recompute = runs.loc["recompute · last, vLLM 0.33.0 (V1)"]
    assert (offload[["vllm_profile", "preemption_victim"]] == ["v0.33", "last"]).all()
    assert recompute["recompute_tax"] > 0 and recompute["loaded_tokens"] == 0
    assert offload["loaded_tokens"] > 0 and offload["recompute_tax"] < recompute["recompute_tax"]
    assert ((runs["recompute_tax"] >= 0) & (runs["recompute_tax"] <= 1)).all()
    with pytest.raises(ValueError, match="Unknown victim policies"):
        small_spec(base, policies=("youngest",))
