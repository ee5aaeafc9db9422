"""Trace readers: columns by name, unknown columns ignored, bad rows by line number."""

import pytest

from pykv.bridge import read_trace
from pykv.bridge.base.bounded_reader import TextSource


def read(text, **kwargs):
    return read_trace(TextSource(text), **kwargs)


def test_azure_trace():
    result = read(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:47.1805900,10,2\n"
    )
    assert result.format == "azure"
    assert [(r.arrival_s, r.input_tokens, r.output_tokens) for r in result.requests] == [(0.0, 374, 44), (0.5, 10, 2)]


def test_burstgpt_v1_2_columns_by_name_and_bad_row_line_number():
    text = (
        "Timestamp,Session ID,Model,Request tokens,Response tokens,Total tokens,Log Type,Elapsed time\n"
        "5.0,s1,ChatGPT,100,20,120,Conversation log,1.2\n"
        "6.5,s1,ChatGPT,oops,20,120,Conversation log,1.2\n"
        "7.0,s2,GPT-4,300,0,300,API log,0.4\n"
    )
    result = read(text)
    assert result.format == "burstgpt"
    assert [(r.arrival_s, r.input_tokens) for r in result.requests] == [(0.0, 100), (2.0, 300)]
    assert result.bad_rows == ["line 3: request tokens 'oops' is not a number"]


def test_mooncake_jsonl_milliseconds_and_hash_ids():
    text = (
        '{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}\n'
        '{"timestamp": 2500, "input_length": 100, "output_length": 5, "hash_ids": [46], "extra": 1}\n'
    )
    result = read(text)
    assert result.format == "mooncake"
    assert [(r.arrival_s, r.prefix_block_ids) for r in result.requests] == [(0.0, (46, 47, 48)), (2.5, (46,))]


def test_bailian_fractional_seconds():
    result = read(
        '{"timestamp": 1.5, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
        '{"timestamp": 3.0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
    )
    assert [r.arrival_s for r in result.requests] == [0.0, 1.5]


def test_vllm_bench_custom_jsonl():
    result = read('{"prompt": "What is the capital of India?"}\n{"prompt": "Hi", "output_tokens": 8}\n')
    assert result.format == "custom"
    assert [(r.arrival_s, r.output_tokens) for r in result.requests] == [(None, None), (None, 8)]


def test_trace_with_no_good_row_is_one_line():
    with pytest.raises(ValueError, match="no usable trace row .line 2"):
        read("TIMESTAMP,ContextTokens,GeneratedTokens\nnot-a-time,1,1\n")


def test_shared_prefix_in_trace_feeds_the_prefix_finding(tmp_path):
    from pykv.bridge import diagnose

    log = tmp_path / "server.log"
    log.write_text(
        "\n".join(
            f"INFO 05-01 09:00:{i}0 [loggers.py:111] Engine 000: Avg prompt throughput: 500.0 tokens/s, Avg generation "
            f"throughput: 80.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 30.0%, Prefix cache hit "
            "rate: 0.0%"
            for i in range(3)
        )
        + "\n"
    )
    trace = tmp_path / "mooncake.jsonl"
    row = '{{"timestamp": {i}, "input_length": 900, "output_length": 9, "hash_ids": [7, {j}]}}\n'
    trace.write_text("".join(row.format(i=i, j=i + 10) for i in range(4)))
    finding = {f.id: f for f in diagnose([log, trace]).findings}["prefix_cache_not_hitting"]
    assert finding.confidence == "high" and "4 of 4 requests share" in " ".join(finding.evidence)
