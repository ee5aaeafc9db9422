"""The Prometheus text reader: names of every era, counters as rates, cache_config_info, damaged bodies."""

import pytest

from pykv.bridge import diagnose
from pykv.bridge.base.bounded_reader import TextSource
from pykv.bridge.metrics.parser import parse_metrics

# vLLM 0.10.2 V1 names (vllm/v1/metrics/loggers.py): deprecated gpu_cache_usage_perc beside kv_cache_usage_perc.
V1_SCRAPE = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="m"}} {running} {ts}
vllm:num_requests_waiting{{engine="0",model_name="m"}} 7.0 {ts}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {kv} {ts}
vllm:gpu_cache_usage_perc{{engine="0",model_name="m"}} 0.10 {ts}
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{{engine="0",model_name="m"}} {preempt} {ts}
vllm:num_preemptions_created{{engine="0",model_name="m"}} 1.7e9 {ts}
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{{engine="0",model_name="m"}} {gen} {ts}
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {queries} {ts}
vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {hits} {ts}
vllm:cache_config_info{{block_size="16",enable_prefix_caching="False",num_cpu_blocks="None",num_gpu_blocks="9000"}} 1.0
python_gc_objects_collected_total{{generation="0"}} 12.0
"""


def scrape(ts, running=3, kv=0.5, preempt=0, gen=0, queries=0, hits=0):
    return V1_SCRAPE.format(ts=ts, running=running, kv=kv, preempt=preempt, gen=gen, queries=queries, hits=hits)


def test_counters_become_interval_deltas_and_rates():
    body = scrape(1_000_000, gen=1000) + scrape(1_010_000, kv=0.97, preempt=20, gen=3000, queries=100, hits=25)
    result = parse_metrics([TextSource(body)])
    first, second = result.samples
    assert (first.preemptions, second.preemptions) == (None, 20)
    assert second.gen_tps == 200.0  # 2000 tokens over 10 s
    assert second.gpu_kv_usage == 0.97  # the replacement name wins over the deprecated one
    assert second.prefix_hit_rate == 0.25
    assert second.time == "1970-01-01T00:16:50Z"  # sample timestamps are milliseconds
    assert [(f.num_gpu_blocks, f.num_cpu_blocks, f.block_size) for f in result.startup] == [(9000, None, 16)]
    assert result.config.enable_prefix_caching is False


def test_separate_files_are_separate_scrapes_and_a_restart_resets_counters(tmp_path):
    paths = []
    for index, preempt in enumerate((50, 80, 5)):
        path = tmp_path / f"scrape{index}.txt"
        path.write_text(scrape("", preempt=preempt))
        paths.append(TextSource(path))
    assert [s.preemptions for s in parse_metrics(paths).samples] == [None, 30, 5]


def test_nan_and_negative_readings_are_ignored():
    body = scrape(1000, kv="NaN") + scrape(2000, running=-4)
    result = parse_metrics([TextSource(body)])
    assert result.samples[0].gpu_kv_usage == 0.10  # NaN replacement: the deprecated reading stands
    assert result.samples[1].running is None
    assert any("negative" in note for note in result.notes)


def test_markdown_damaged_paste_still_parses():
    body = "```\n" + "\n".join("> " + line.replace("_", "\\_") for line in scrape(1000).splitlines()) + "\n```\n"
    assert parse_metrics([TextSource(body)]).samples[0].running == 3


@pytest.mark.parametrize("body", ["", "# metrics are off\n", "python_gc_objects_collected_total 1.0\n"])
def test_a_body_without_vllm_samples_is_one_sentence(body):
    with pytest.raises(ValueError, match="no vllm: samples") as info:
        parse_metrics([TextSource(body)])
    assert "\n" not in str(info.value)


def test_v0_names_and_histogram_for_rethrash():
    v0 = (
        'vllm:num_requests_swapped{model_name="m"} 2.0\nvllm:cpu_cache_usage_perc{model_name="m"} 0.99\n'
        'vllm:gpu_cache_usage_perc{model_name="m"} 0.99\nvllm:num_requests_running{model_name="m"} 9.0\n'
    )
    result = diagnose(v0).to_json_dict()
    assert result["engine"] == "v0" and result["samples"][0]["swapped"] == 2
    hist = "".join(
        f'vllm:request_num_preemptions_bucket{{engine="0",le="{le}"}} {n}\n'
        for le, n in (("0.0", 5), ("1.0", 8), ("2.0", 11), ("+Inf", 12))
    )
    body = scrape(1000, running=1, kv=0.99) + hist + scrape(2000, running=1, kv=0.99, preempt=9) + hist
    diagnosis = diagnose(body)
    assert diagnosis.release.text == "V1, 0.30.0-0.33.0"
    assert diagnosis.release.at_least("0.33.0") is None
    ids = {f.id: f for f in diagnosis.findings}
    assert "chunked_prefill_rethrash" in ids and "4 finished request(s)" in " ".join(
        ids["chunked_prefill_rethrash"].evidence
    )
