"""A point's repeats as one row: each time's median with the fastest and slowest repeat beside it (``_lo``,
``_hi``), the counts once (they must agree: the schedule is deterministic), and the machine's load when the point
ran. See ``pykv.border.timing_measures`` for what the two clocks mean and when a point is flagged."""

from __future__ import annotations

import os
import statistics
from typing import Sequence

from pykv.border.timing_measures import TIMED_COLUMNS

COUNT_COLUMNS = ("preemptions", "recomputed_tokens", "swapped_bytes", "swap_copies", "loaded_tokens", "output_tokens")
LATENCY_COLUMNS = ("ttft_p50_s", "ttft_p95_s", "tpot_p50_s", "tpot_p95_s")  # medians over the repeats, no spread
SPREAD_COLUMNS = tuple(f"{c}{end}" for c in TIMED_COLUMNS for end in ("_lo", "_hi"))
COST_TIMES = ("measured_s", "measured_cpu_s")  # a preemption's cost on each clock
COST_SPREAD_COLUMNS = tuple(f"{c}{end}" for c in COST_TIMES for end in ("_lo", "_hi"))


def load_average() -> float | None:
    """The machine's load over the last minute (``os.getloadavg``), where the platform has one."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _median(values: Sequence[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None and v == v]
    return statistics.median(present) if present else None


def _spread(name: str, values: Sequence[float | None]) -> dict:
    present = [float(v) for v in values if v is not None and v == v]
    return {
        name: statistics.median(present) if present else None,
        f"{name}_lo": min(present) if present else None,
        f"{name}_hi": max(present) if present else None,
    }


def merge_runs(rows: Sequence[dict], label: str) -> dict:
    """One row from a point's repeats (``rows``, in the order run): the first's fields, each time its median with
    the fastest and slowest repeat, ``repeats``. RuntimeError if the repeats counted differently."""
    first = rows[0]
    for i, row in enumerate(rows[1:], start=2):
        differ = [c for c in COUNT_COLUMNS if row[c] != first[c]]
        if differ:
            raise RuntimeError(
                f"{label}: repeat {i} counted {differ[0]}={row[differ[0]]}, repeat 1 {first[differ[0]]}; a schedule "
                "should not depend on the clock (please report it)."
            )
    merged = dict(first)
    for column in TIMED_COLUMNS:
        merged |= _spread(column, [r[column] for r in rows])
    for column in LATENCY_COLUMNS:
        merged[column] = _median([r[column] for r in rows])
    merged["repeats"] = len(rows)
    return merged


def merge_costs(repeats: Sequence[list[dict]], label: str) -> list[dict]:
    """Each preemption once (they are the same preemptions every repeat: matched by step and request), its cost the
    median over the repeats with the fastest and slowest beside it."""
    first = repeats[0]
    keys = [(c["step"], c["request_id"]) for c in first]
    for i, costs in enumerate(repeats[1:], start=2):
        if [(c["step"], c["request_id"]) for c in costs] != keys:
            raise RuntimeError(f"{label}: repeat {i} preempted other requests or steps than repeat 1.")
    merged = []
    for j, cost in enumerate(first):
        row = dict(cost)
        for column in COST_TIMES:
            row |= _spread(column, [costs[j][column] for costs in repeats])
        merged.append(row)
    return merged
