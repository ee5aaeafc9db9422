"""Request traces to replay: Azure LLM inference (CSV), BurstGPT (CSV, v1.0 and v1.2 columns), Mooncake /
Qwen-Bailian (JSONL with hash_ids: equal ids are shared prefix blocks), vLLM bench `custom` JSONL ({"prompt": ...}).

Columns are found by name (case and spacing ignored), unknown columns are ignored, a bad row is reported by its
line number. At most `max_rows` rows are read and at most `max_requests` kept (an evenly spaced sample), each with
at most MAX_KEPT_BLOCK_IDS of its hash ids (the leading ones: what a replay shares, and all the shared-prefix count
reads). What a diagnosis holds of a trace is so bounded whatever the file: a .gz of identical rows with 5,000 hash
ids each once took the server from 0.7 to 4.0 GiB in 15 s.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field

from pykv.bridge.base.bounded_reader import TextSource
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.traces.rows import CSV_FORMATS, parse_csv_row, parse_json_row

MAX_ROWS_READ = 1_000_000
MAX_REQUESTS = 20_000  # the sample kept: its means and the replay's 32 requests need far fewer
MAX_KEPT_BLOCK_IDS = 8  # leading hash ids kept per request (a replay's prompt shares at most 4 blocks)
MAX_BAD_ROWS_LISTED = 20


@dataclass(slots=True)
class TraceRequest:
    arrival_s: float | None  # seconds after the trace's first request; None: the format has no times (custom)
    input_tokens: int
    output_tokens: int | None  # None: the format leaves it to the replay (custom without output_tokens)
    prefix_block_ids: tuple[int, ...] | None = None  # Mooncake hash_ids: equal ids share a KV block


@dataclass
class TraceParse:
    format: str
    requests: list[TraceRequest]
    rows_read: int
    rows_good: int
    bad_rows: list[str] = field(default_factory=list)  # "line 12: ...", the first few
    bad_row_count: int = 0
    stopped_early: bool = False  # max_rows reached: the trace goes on
    notes: list[str] = field(default_factory=list)
    block_ids_cut: int = 0  # good rows with more than MAX_KEPT_BLOCK_IDS hash ids (the rest dropped)

    @property
    def sample_statement(self) -> str:
        kept = len(self.requests)
        head = f"{kept:,} of {self.rows_good:,} good rows kept"
        if self.stopped_early:
            head += f" (reading stopped after {self.rows_read:,} rows: the trace is longer)"
        return head


def sniff_trace_format(head: str) -> str | None:
    """'azure', 'burstgpt', 'mooncake', 'custom', or None."""
    first = head.lstrip("\ufeff").lstrip().split("\n", 1)[0]
    if first.startswith("{"):
        try:
            record = json.loads(first)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            return None
        if not isinstance(record, dict):
            return None
        if "input_length" in record or "hash_ids" in record:
            return "mooncake"
        if "prompt" in record:
            return "custom"
        return None
    header = {column.strip().lower().replace("_", " ") for column in first.split(",")}
    for name, required in CSV_FORMATS.items():
        if required <= header:
            return name
    return None


def read_trace(source: TextSource, max_requests: int = MAX_REQUESTS, max_rows: int = MAX_ROWS_READ) -> TraceParse:
    kind = sniff_trace_format(source.head)
    if kind is None:
        raise BridgeInputError(
            f"{source.label}: not a trace this reads (Azure, BurstGPT, Mooncake/Bailian JSONL, "
            "vLLM custom JSONL); check the header line"
        )
    result = TraceParse(format=kind, requests=[], rows_read=0, rows_good=0)
    stride, first_arrival, raw_ms = 1, None, kind == "mooncake"
    lines = source.lines()
    header: list[str] | None = None
    if kind in CSV_FORMATS:
        _, first = next(lines)
        header = [column.strip().lower().replace("_", " ") for column in next(csv.reader([first.lstrip("\ufeff")]))]
    for number, line in lines:
        if not line.strip():
            continue
        if result.rows_read >= max_rows:
            result.stopped_early = True
            break
        result.rows_read += 1
        try:
            arrival, inputs, outputs, blocks = (
                parse_csv_row(kind, header, line) if header is not None else parse_json_row(kind, line)
            )
        except ValueError as exc:
            result.bad_row_count += 1
            if len(result.bad_rows) < MAX_BAD_ROWS_LISTED:
                result.bad_rows.append(f"line {number}: {exc}")
            continue
        if raw_ms and arrival is not None and not float(arrival).is_integer():
            raw_ms = False  # fractional stamps: seconds (Bailian) rather than Mooncake's integer milliseconds
        result.rows_good += 1
        if first_arrival is None and arrival is not None:
            first_arrival = arrival
        if blocks is not None and len(blocks) > MAX_KEPT_BLOCK_IDS:
            blocks = blocks[:MAX_KEPT_BLOCK_IDS]
            result.block_ids_cut += 1
        if (result.rows_good - 1) % stride:
            continue
        result.requests.append(TraceRequest(arrival, inputs, outputs, blocks))
        if len(result.requests) >= 2 * max_requests:  # keep every other one, and from now on every 2*stride-th row
            result.requests = result.requests[::2]
            stride *= 2
    _finish(result, first_arrival, raw_ms, max_requests, source.label)
    return result


def _finish(result: TraceParse, first_arrival: float | None, raw_ms: bool, max_requests: int, label: str) -> None:
    if not result.rows_good:
        detail = result.bad_rows[0] if result.bad_rows else "no rows after the header"
        raise BridgeInputError(f"{label}: no usable trace row ({detail})")
    if len(result.requests) > max_requests:
        step = len(result.requests) / max_requests
        result.requests = [result.requests[int(i * step)] for i in range(max_requests)]
    scale = 0.001 if raw_ms else 1.0
    if raw_ms:
        result.notes.append("integer timestamps read as milliseconds (Mooncake)")
    base = first_arrival if first_arrival is not None else 0.0
    for request in result.requests:
        if request.arrival_s is not None:
            request.arrival_s = round((request.arrival_s - base) * scale, 6)
    result.requests.sort(key=lambda r: (r.arrival_s is None, r.arrival_s or 0.0))
    result.notes.append(result.sample_statement)
    if result.block_ids_cut:
        result.notes.append(
            f"hash ids: the first {MAX_KEPT_BLOCK_IDS} of each request kept ({result.block_ids_cut:,} rows had more): "
            "the shared-prefix count and the replay read no further"
        )
