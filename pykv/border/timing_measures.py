"""The two clocks a measured cost is read on, and how a sweep says how sure it is of one.

Every measured time has a CPU twin: ``wall_s`` / ``cpu_s``, ``recompute_s`` / ``recompute_cpu_s``, ``measured_s`` /
``measured_cpu_s``. The wall clock (``time.perf_counter``) is what a user waited, other work on the machine
included; the engine thread's CPU time (``time.thread_time``; the engine runs one intra-op thread) leaves out the
time the thread waited for a CPU that a busy machine gave to other work. Counts (preemptions, recomputed tokens,
swapped blocks and bytes) need neither: the schedule is deterministic, the same on any machine and every repeat.

A sweep runs each point ``repeats`` times and keeps each time's median with the fastest and slowest repeat beside it
(``<column>_lo``, ``<column>_hi``); a point whose spread (slowest - fastest) is over NOISY_SPREAD of its median is
flagged. A border type: the lab fills these columns, the figures and the review pack read them.
"""

from __future__ import annotations

import math

MEASURES: dict[str, str] = {
    "cpu": "CPU time of the engine thread",
    "wall": "wall time",
}
MEASURE_NOTES: dict[str, str] = {
    "cpu": "CPU time of the engine thread (time.thread_time): the work itself, without the waits a busy machine adds",
    "wall": "wall time (time.perf_counter): what a user waited, other work on the machine included",
}
DEFAULT_MEASURE = "cpu"
NOISY_SPREAD = 0.25  # a point whose slowest and fastest repeats differ by more than this share of their median
SPREAD_SUFFIXES = ("_lo", "_hi")  # the fastest and slowest repeat of a median column

# The times a sweep keeps with their spread (wall first, its CPU twin next).
WALL_TIMES = ("wall_s", "tokens_per_s", "recompute_s", "swap_s")


def twin(column: str, measure: str) -> str:
    """``column`` (a wall-clock column) as ``measure`` reads it: ``twin("wall_s", "cpu") == "cpu_s"``,
    ``twin("tokens_per_s", "cpu") == "tokens_per_cpu_s"``, ``twin("recompute_s", "cpu") == "recompute_cpu_s"``."""
    if measure not in MEASURES:
        raise ValueError(f"Unknown measure {measure!r}; choose one of {', '.join(MEASURES)}.")
    if measure == "wall":
        return column
    if column == "wall_s":
        return "cpu_s"
    if not column.endswith("_s"):
        raise ValueError(f"{column!r} is no time column.")
    return column[: -len("_s")] + "_cpu_s"


TIMED_COLUMNS = tuple(c for wall in WALL_TIMES for c in (wall, twin(wall, "cpu")))


def relative_spread(lo: float | None, hi: float | None, median: float | None) -> float | None:
    """(slowest - fastest) / median; None where it means nothing (a median of 0 or a missing value)."""
    values = (lo, hi, median)
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values) or not median:
        return None
    return (float(hi) - float(lo)) / abs(float(median))  # type: ignore[arg-type]


def is_noisy(lo: float | None, hi: float | None, median: float | None) -> bool:
    spread = relative_spread(lo, hi, median)
    return spread is not None and spread > NOISY_SPREAD
