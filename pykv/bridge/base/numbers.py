"""Every number the bridge reads from a file is bounded and finite, or it is not read.

A count past MAX_COUNT, a rate past MAX_RATE, a time past MAX_EPOCH_S or a value that is not finite (inf, NaN, a
400-digit "Running:") is no server's: the reader drops that one field (and says how many it dropped), so nothing
downstream (a sum, a rate, a date, a replay's pool, ``--json``) meets an infinity or a number too long to print.
Text is measured before it is converted: a 4,000-digit string is never turned into an int.
"""

from __future__ import annotations

import math

MAX_COUNT = 10**12  # requests, blocks, tokens, preemptions: far past any real server's
MAX_RATE = 1e12  # tokens per second
MAX_GIB = 1e6  # a memory size in GiB (a petabyte)
MAX_EPOCH_S = 1e11  # seconds since 1970 (the year 5138): a later clock is not a server's
MAX_TRACE_STAMP = 1e13  # a trace's raw timestamp: seconds, or Mooncake's milliseconds (the year 2286)
MAX_METRIC_VALUE = 1e15  # one Prometheus reading (a counter of tokens over years stays far below)
_MAX_NUMBER_CHARS = 40  # a number's text longer than this is refused before any conversion


def bounded_float(value: object, high: float, low: float = 0.0) -> float | None:
    """``value`` (text or a number) as a finite float in [low, high]; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if len(value) > _MAX_NUMBER_CHARS:
            return None
        try:
            number = float(value)
        except ValueError:
            return None
    elif isinstance(value, (int, float)):
        if isinstance(value, int) and not -(10**20) < value < 10**20:  # float() of a huge int overflows
            return None
        number = float(value)
    else:
        return None
    if not math.isfinite(number) or not low <= number <= high:
        return None
    return number


def bounded_int(value: object, high: int = MAX_COUNT, low: int = 0) -> int | None:
    """``value`` (digits, a float's text, or a number) as an int in [low, high]; None when it is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if low <= value <= high else None
    number = bounded_float(value, float(high), float(low))
    return int(number) if number is not None else None
