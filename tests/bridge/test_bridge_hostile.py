"""Hostile input: one line of error (or a note) and nothing else lost."""

import gzip
from pathlib import Path

import pytest
from growth import assert_growth

from pykv.bridge import diagnose
from pykv.bridge.base.bounded_reader import MAX_LINE_BYTES, TextSource
from pykv.bridge.logs.parser import parse_log
from pykv.bridge.metrics.parser import MAX_SERIES_PER_METRIC, parse_metrics
from pykv.bridge.traces.reader import read_trace

STATS = (
    "INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 "
    "tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 50.0%, CPU KV cache "
    "usage: 0.0%.\n"
)


def test_binary_file_is_one_line(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(ValueError, match="looks binary") as info:
        diagnose(path)
    assert "\n" not in str(info.value)


def test_ten_megabyte_line_keeps_the_records_around_it(tmp_path):
    path = tmp_path / "server.log"
    path.write_text(STATS + "x" * 10_000_000 + "\n" + STATS)
    source = TextSource(path)
    result = parse_log(source)
    assert len(result.samples) == 2 and result.lines_read == 3
    assert any("over 64 KB" in note for note in result.notes) and source.stats.overlong_lines == 1
    assert MAX_LINE_BYTES == 64 * 1024

    def written(n: int) -> Path:
        path = tmp_path / f"server-{n}.log"
        path.write_text(STATS + "x" * n + "\n" + STATS)
        return path

    assert_growth(written, lambda path: parse_log(TextSource(path)), 1_000_000)  # a long line is skipped in passing


def test_non_utf8_bytes_do_not_stop_the_reader(tmp_path):
    path = tmp_path / "latin1.log"
    path.write_bytes(b"caf\xe9 \xff\xfe\n" + STATS.encode())
    assert diagnose(path).samples[0].running == 3


def test_zip_bomb_stops_at_the_bound(tmp_path):
    path = tmp_path / "bomb.log.gz"
    path.write_bytes(gzip.compress(STATS.encode() + b"\n" * 20_000_000, compresslevel=1))
    result = parse_log(TextSource(path, max_decompressed=1_000_000))
    assert len(result.samples) == 1
    assert any("bound on decompressed input" in note for note in result.notes)
    assert result.lines_read < 1_100_000


def test_a_million_label_sets_are_capped():
    result = parse_metrics([TextSource(label_sets(1_000_000))])
    assert result.samples[0].running == MAX_SERIES_PER_METRIC  # summed over the label sets kept
    assert any("label set(s) beyond" in note for note in result.notes)
    assert_growth(label_sets, lambda text: parse_metrics([TextSource(text)]), 25_000)  # all past the cap


def label_sets(n: int) -> str:
    return "".join(f'vllm:num_requests_running{{engine="{i}"}} 1.0\n' for i in range(n))


def test_ten_million_row_trace_is_bounded_and_says_so(tmp_path):
    path = tmp_path / "azure.csv.gz"
    row = b"2023-11-16 18:15:46.6805900,374,44\n"
    with gzip.open(path, "wb", compresslevel=1) as stream:
        stream.write(b"TIMESTAMP,ContextTokens,GeneratedTokens\n")
        block = row * 100_000
        for _ in range(100):
            stream.write(block)
    result = read_trace(TextSource(path), max_requests=1000, max_rows=200_000)
    assert len(result.requests) == 1000 and result.stopped_early
    assert "1,000 of 200,000 good rows kept" in result.sample_statement
    assert "the trace is longer" in result.sample_statement


def test_regexes_do_not_backtrack_on_hostile_stats_text():
    def evil(n: int) -> str:
        text = "Avg prompt throughput: " + "1" * n + "." * n + " Running: " + "(" * (2 * n // 5)
        return "INFO 06-16 21:24:15 metrics.py:341] " + text + "\n"

    assert_growth(evil, lambda text: parse_log(TextSource(text)), 12_500)
