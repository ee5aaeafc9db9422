"""One trace row into (arrival, input tokens, output tokens, prefix block ids); ValueError says what is wrong."""

from __future__ import annotations

import csv
import json
from datetime import datetime

from pykv.bridge.base.numbers import MAX_TRACE_STAMP, bounded_float

# Required header names per CSV format (lower case, underscores as spaces).
CSV_FORMATS = {
    "azure": {"timestamp", "contexttokens", "generatedtokens"},
    "burstgpt": {"timestamp", "request tokens", "response tokens"},
}
_COLUMNS = {
    "azure": ("timestamp", "contexttokens", "generatedtokens"),
    "burstgpt": ("timestamp", "request tokens", "response tokens"),
}
_MAX_BLOCK_IDS = 100_000
CHARS_PER_TOKEN = 4  # custom JSONL carries text, not token counts: a rough English estimate


def _tokens(value: object, what: str) -> int:
    try:
        number = float(value)  # type: ignore[arg-type]  # any cell: float() refuses what is not a number
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} {str(value)[:40]!r} is not a number") from None
    if number != number or number < 0 or number > 10**9:
        raise ValueError(f"{what} {str(value)[:40]!r} is not a token count")
    return int(number)


def _timestamp(value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]  # any cell: float() refuses what is not a number
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is not None:
        if bounded_float(number, MAX_TRACE_STAMP) is None:  # inf, NaN, negative, or no clock's
            raise ValueError(f"timestamp {str(value)[:40]!r} is not a time")
        return number
    text = str(value).strip()
    if "." in text:  # Azure prints 7 fractional digits; datetime takes 6
        head, _, tail = text.partition(".")
        text = head + "." + tail[:6]
    try:
        return datetime.fromisoformat(text[:64]).timestamp()
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"timestamp {value!r} is not a time") from None


def parse_csv_row(kind: str, header: list[str], line: str) -> tuple:
    cells = next(csv.reader([line]))
    if len(cells) < len(header):
        raise ValueError(f"{len(cells)} cells for {len(header)} columns")
    row = dict(zip(header, cells))
    stamp_col, input_col, output_col = _COLUMNS[kind]
    return (_timestamp(row[stamp_col]), _tokens(row[input_col], input_col), _tokens(row[output_col], output_col), None)


def parse_json_row(kind: str, line: str) -> tuple:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep
        raise ValueError("not a JSON object") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    if kind == "custom":
        prompt = record.get("prompt")
        if not isinstance(prompt, str):
            raise ValueError("no 'prompt' string")
        outputs = record.get("output_tokens", record.get("output_len"))
        return (
            None,
            max(1, len(prompt) // CHARS_PER_TOKEN),
            _tokens(outputs, "output_tokens") if outputs is not None else None,
            None,
        )
    for key in ("input_length", "output_length"):
        if key not in record:
            raise ValueError(f"no {key!r}")
    blocks = record.get("hash_ids")
    if blocks is not None:
        if not isinstance(blocks, list) or len(blocks) > _MAX_BLOCK_IDS:
            raise ValueError("hash_ids is not a list of block ids")
        try:
            blocks = tuple(int(b) for b in blocks)
        except (TypeError, ValueError, OverflowError):
            raise ValueError("hash_ids holds a non-integer") from None
    stamp = record.get("timestamp")
    return (
        _timestamp(stamp) if stamp is not None else None,
        _tokens(record["input_length"], "input_length"),
        _tokens(record["output_length"], "output_length"),
        blocks,
    )
