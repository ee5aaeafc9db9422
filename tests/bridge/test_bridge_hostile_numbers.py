"""Issue 50, hole 5: hostile numbers and JSON. Every number read from a file is bounded and finite (or not read, and a
note says so); the diagnosis, its JSON, its baseline and its replay never meet an infinity or a 4,000-digit int."""

from __future__ import annotations

import json
import math

import pytest

from pykv.bridge import diagnose
from pykv.bridge.baseline import baseline_body, compare, parse_baseline

MAX_COUNT = 10**12  # pykv.bridge.base.numbers.MAX_COUNT

STATS = (
    "INFO 06-16 21:24:{second:02d} metrics.py:341] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: "
    "{gen} tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: {usage}%, CPU KV "
    "cache usage: 0.0%.\n"
)
WARNING = (
    "WARNING 06-16 21:24:16 scheduler.py:1057] Sequence group {rid} is preempted by PreemptionMode.RECOMPUTE mode "
    "because there is not enough KV cache space. total_num_cumulative_preemption={count}\n"
)


def stats(second: int = 15, running: str = "3", usage: str = "50.0", gen: str = "2.0") -> str:
    return STATS.format(second=second, running=running, usage=usage, gen=gen)


def finite_json(diagnosis) -> dict:
    """The --json body, held to strict JSON (no Infinity, no NaN) and to bounded numbers."""
    text = json.dumps(diagnosis.to_json_dict(), allow_nan=False)
    body = json.loads(text)
    for number in _numbers(body):
        assert math.isfinite(number) and abs(number) <= 10**15, number
    return body


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)


def test_a_400_digit_running_count_is_not_read_and_said():
    d = diagnose(stats(running="9" * 400) + stats(second=25))
    assert d.samples[0].running is None and d.samples[1].running == 3
    assert any("too large" in note for note in d.notes)
    finite_json(d)


@pytest.mark.parametrize("usage", ["9" * 400, "1" + "0" * 320, "250.0"])
def test_kv_usage_past_100_percent_is_not_read(usage):
    d = diagnose(stats(usage=usage))
    assert d.samples[0].gpu_kv_usage is None
    finite_json(d)


def test_a_throughput_past_any_server_is_not_an_infinity_in_json():
    d = diagnose(stats(gen="9" * 400) + stats(second=25))
    assert d.samples[0].gen_tps is None
    finite_json(d)
    json.dumps(baseline_body(d), allow_nan=False)


def test_a_4000_digit_cumulative_preemption_count_is_not_read():
    log = stats() + WARNING.format(rid="5", count="9" * 4000) + stats(second=45)
    d = diagnose(log)
    assert d.preemptions_at_least < MAX_COUNT
    body = finite_json(d)
    assert any("too large" in note for note in d.notes)
    figures = baseline_body(d)["figures"]  # preemptions per minute: no OverflowError dividing a 4,000-digit int
    assert figures["preemptions_at_least"] is None or figures["preemptions_at_least"] < MAX_COUNT
    assert body["preemptions_at_least"] == d.preemptions_at_least


def test_4290_digit_block_counts_are_not_read():
    big = "9" * 4290
    log = (
        f"INFO 06-16 21:24:10 gpu_executor.py:122] # GPU blocks: {big}, # CPU blocks: {big}\n"
        "INFO 06-16 21:24:10 gpu_executor.py:126] Maximum concurrency for 2048 tokens per request: 5.00x\n" + stats()
    )  # before: OverflowError deriving the block size (tokens / a 4,290-digit int)
    d = diagnose(log)
    assert all(fact.num_gpu_blocks is None for fact in d.startup)
    assert any("2 number(s) too large" in note for note in d.notes)
    finite_json(d)
    f"{d.preemptions_at_least:,}"  # noqa: B018  (what the page and the CLI print)


def test_config_dump_infinities_are_not_read():
    log = "INFO 06-16 21:24:10 arg_utils.py:1] non-default args: {'gpu_memory_utilization': inf, 'max_num_seqs': nan}\n"
    log += "INFO 06-16 21:24:10 api_server.py:1] args: Namespace(swap_space=1e999, block_size=16)\n"
    d = diagnose(log + stats())
    assert d.config.gpu_memory_utilization is None and d.config.max_num_seqs is None
    assert d.config.swap_space_gib is None and d.config.block_size == 16


def test_cache_config_info_with_an_infinite_block_count():
    body = 'vllm:cache_config_info{num_gpu_blocks="inf",block_size="16"} 1.0\nvllm:num_requests_running 3.0\n'
    d = diagnose(body)
    assert d.startup[0].num_gpu_blocks is None and d.startup[0].block_size == 16
    assert any("out-of-range" in note for note in d.notes)
    finite_json(d)


def test_metric_timestamps_of_1e20_ms_are_ignored_and_said():
    body = "vllm:num_requests_running 3.0 100000000000000000000\nvllm:num_requests_running 4.0 100000000000000000001\n"
    with pytest.raises(ValueError, match="usable time") as info:
        diagnose(body)
    assert "\n" not in str(info.value)
    good = "vllm:num_requests_running 5.0 1700000000000\n"
    d = diagnose(body + good)
    assert [s.running for s in d.samples] == [5] and any("year 5138" in note for note in d.notes)
    finite_json(d)


def test_metric_values_past_any_server_are_rejected():
    body = "vllm:num_requests_running 1e300\nvllm:generation_tokens_total 1e308\nvllm:num_requests_waiting 2\n"
    d = diagnose(body)
    assert d.samples[0].running is None and d.samples[0].waiting == 2
    finite_json(d)


@pytest.mark.parametrize("stamp", ["1e999", "NaN", "Infinity", "-Infinity", "1e300"])
def test_trace_timestamps_inf_and_nan_are_bad_rows(stamp):
    rows = [f'{{"timestamp": {stamp}, "input_length": 10, "output_length": 5}}'] + [
        f'{{"timestamp": {t}, "input_length": 10, "output_length": 5}}' for t in (5, 7)
    ]
    d = diagnose("\n".join(rows) + "\n")
    (trace,) = d.traces
    assert trace.bad_row_count == 1 and all(math.isfinite(r.arrival_s) for r in trace.requests)
    finite_json(d)


def test_csv_trace_timestamps_inf_are_bad_rows():
    d = diagnose("TIMESTAMP,ContextTokens,GeneratedTokens\ninf,374,44\nnan,1,1\n3.0,374,44\n4.5,10,10\n")
    assert d.traces[0].bad_row_count == 2


def test_json_nested_30000_deep_in_a_trace_row_is_a_bad_row():
    deep = "[" * 30_000 + "]" * 30_000
    rows = [
        '{"timestamp": 1, "input_length": 10, "output_length": 5}',
        '{"timestamp": 2, "input_length": 10, "output_length": 5, "x": ' + deep + "}",
        '{"timestamp": 3, "input_length": 10, "output_length": 5, "hash_ids": [1e999]}',
    ]
    d = diagnose("\n".join(rows) + "\n")
    assert d.traces[0].bad_row_count == 2 and "not a JSON object" in d.traces[0].bad_rows[0]


def test_a_first_trace_row_nested_30000_deep_is_one_error_line():
    with pytest.raises(ValueError) as info:
        diagnose('{"prompt": ' + "[" * 30_000 + "]" * 30_000 + "}\n")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "raw, words",
    [
        (b'{"baseline_version": 1, "figures": {}, "x": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", "nested too deeply"),
        (b'{"baseline_version": 1, "figures": {"mean_gen_tps": Infinity}}', "Infinity"),
        (b'{"baseline_version": 1, "figures": {"mean_gen_tps": NaN}}', "NaN"),
        (b'{"baseline_version": 1, "figures": {"mean_gen_tps": 1e999}}', "not a number"),
        (b'{"baseline_version": 1, "figures": {"preemptions_per_min": ' + b"9" * 4000 + b"}}", "baseline"),
    ],
)
def test_hostile_baselines_are_one_line(raw, words):
    with pytest.raises(ValueError, match=words) as info:
        parse_baseline(raw)
    assert "\n" not in str(info.value)


def test_a_huge_but_finite_baseline_figure_compares_without_overflow():
    d = diagnose(stats() + stats(second=45))
    body = parse_baseline(json.dumps({"baseline_version": 1, "figures": {"mean_gen_tps": 10**17}}).encode())
    assert compare(d, body).verdict.startswith("worse")
