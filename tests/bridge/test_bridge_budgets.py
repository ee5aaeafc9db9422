"""Issue 50 #3 and #4: what reading a trace or log keeps and spends is bounded whatever the file: hash ids per
request, requests kept, lines read, CPU time; a read says why it stopped and is cancelled when its page is gone."""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc

import pytest

from pykv.bridge import diagnose
from pykv.bridge.base.bounded_reader import MAX_LINES_READ, ReadBudget, ReadCancelled, TextSource
from pykv.bridge.traces.reader import MAX_KEPT_BLOCK_IDS, MAX_REQUESTS, read_trace

STATS = (
    "INFO 06-16 21:24:{s:02d} metrics.py:341] Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 5.0 "
    "tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 1 reqs, GPU KV cache usage: 90.0%, "
    "CPU KV cache usage: 0.0%.\n"
)


def many_ids(rows: int, ids: int = 5000) -> bytes:
    row = json.dumps({"timestamp": 0, "input_length": 2_560_000, "output_length": 10, "hash_ids": list(range(ids))})
    return gzip.compress((row + "\n").encode() * rows, compresslevel=6)


def test_a_trace_of_long_hash_id_rows_is_held_small():
    """Identical rows of 5,000 hash ids each: a 15.7 MB .gz took the server from 0.7 to 4.0 GiB. Each request now
    keeps its leading MAX_KEPT_BLOCK_IDS ids, what the replay and the shared-prefix count read."""
    blob = many_ids(1000)
    tracemalloc.start()
    d = diagnose(blob)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    (trace,) = d.traces
    assert len(trace.requests) == 1000 and all(len(r.prefix_block_ids) == MAX_KEPT_BLOCK_IDS for r in trace.requests)
    assert held < 8 * 2**20, f"the diagnosis holds {held / 2**20:.0f} MiB"  # was ~200 MiB
    assert any("the first 8 of each request kept" in n for n in d.notes)


def test_the_sample_kept_is_bounded():
    rows = "".join(
        f'{{"timestamp": {i}, "input_length": 10, "output_length": 2, "hash_ids": [{i}]}}\n' for i in range(50_000)
    )
    trace = read_trace(TextSource(rows.encode()))
    assert len(trace.requests) == MAX_REQUESTS <= 20_000 and trace.rows_good == 50_000


def test_a_gz_of_newlines_stops_at_the_line_limit_and_says_so():
    """A 2.6 MB .gz of newlines (2 GiB of empty lines) once asked ~2 h of a core; the lines read are bounded."""
    blob = gzip.compress(STATS.format(s=1).encode() + b"\n" * 3_000_000, compresslevel=9)
    assert len(blob) < 10_000
    d = diagnose(blob, budget=ReadBudget(max_lines=100_000))
    assert d.lines_read <= 100_000 + 2048
    assert any("reading stopped after 100,352 lines (the limit: 100,000)" in n for n in d.notes)
    assert ReadBudget().max_lines == MAX_LINES_READ <= 10_000_000  # every read has it


def test_nothing_usable_before_the_stop_says_why_it_stopped():
    blob = gzip.compress(b"\n" * 500_000 + STATS.format(s=1).encode())
    with pytest.raises(ValueError, match=r"found no vLLM stats line.*reading stopped after"):
        diagnose(blob, budget=ReadBudget(max_lines=10_000))


def test_a_read_stops_after_its_cpu_time_and_reports_progress():
    text = "".join(STATS.format(s=i % 60) for i in range(200_000)).encode()
    seen = []
    d = diagnose(text, budget=ReadBudget(cpu_s=0.2, progress=lambda b, n, s: seen.append((b, n)), progress_every_s=0))
    assert any("s of CPU time (the limit: 0.2 s)" in n for n in d.notes)
    assert 0 < d.lines_read < 200_000
    assert seen and seen == sorted(seen) and seen[-1][1] > 0


def test_a_read_whose_page_is_gone_is_cancelled():
    asked = []

    def gone() -> bool:
        asked.append(1)
        return len(asked) > 3

    text = "".join(STATS.format(s=i % 60) for i in range(50_000)).encode()
    with pytest.raises(ReadCancelled, match="page that asked for it was closed"):
        diagnose(text, budget=ReadBudget(should_stop=gone))


def test_an_over_long_line_is_skipped_within_the_budget():
    blob = gzip.compress(STATS.format(s=1).encode() + b"x" * (256 << 20), compresslevel=1)
    d = diagnose(blob, budget=ReadBudget(cpu_s=0.05))
    assert any("s of CPU time" in n for n in d.notes) or d.lines_read == 2


def test_an_uploaded_file_is_read_in_place_and_left_open():
    upload = io.BytesIO(gzip.compress(STATS.format(s=1).encode() * 3))
    upload.name = "server.log.gz"
    d = diagnose(upload)
    assert len(d.samples) == 3 and not upload.closed
    assert diagnose([upload]).samples == d.samples  # read again from its start


def test_a_trace_cut_at_the_byte_bound_says_so():
    rows = "".join(f'{{"timestamp": {i}, "input_length": 10, "output_length": 2}}\n' for i in range(5000)).encode()
    d = diagnose(rows, max_decompressed=50_000)
    assert any("stopped after 50,000 bytes (the bound on decompressed input)" in n for n in d.notes)
