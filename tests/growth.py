"""Complexity guards without a clock budget. A unit test that says "within a second" fails on a busy machine and
passes a quadratic algorithm on a fast one; ``assert_growth`` times the same work at two input sizes instead and
bounds how the time grows: by default, 4x the input may take at most 8x the time (linear work takes 4x, quadratic
16x; the slack is for caches and the allocator, which make linear work cost more per byte as it grows out of them).
With a larger ``factor`` and a small ``max_ratio`` it says the work does not grow with the input at all (a bound
checked before anything is built).

The two sizes are timed in turn, ``repeat`` times, and each keeps its best time (the least disturbed run); the
pair is measured again, up to ``attempts`` times, before the check fails: other work on a shared machine slows a
run down, never speeds it up. A time under ``floor_s`` counts as ``floor_s`` (timer and scheduler noise, not
growth): choose sizes at which the growth being ruled out would take far longer than that. Speed targets (how
fast, on what machine) belong in bench/, not here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def elapsed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def assert_growth(
    make: Callable[[int], T],
    work: Callable[[T], object],
    size: int,
    *,
    factor: int = 4,
    max_ratio: float = 8.0,
    repeat: int = 7,
    attempts: int = 3,
    floor_s: float = 1e-4,
) -> None:
    """``work(make(factor * size))`` takes at most ``max_ratio`` times as long as ``work(make(size))``; the inputs
    are made before the clock starts."""
    small, large = make(size), make(factor * size)
    ratios = []
    for _ in range(attempts):
        t_small = t_large = float("inf")
        for _ in range(repeat):
            t_small = min(t_small, elapsed(lambda: work(small)))
            t_large = min(t_large, elapsed(lambda: work(large)))
        ratios.append(max(t_large, floor_s) / max(t_small, floor_s))
        if ratios[-1] <= max_ratio:
            return
    raise AssertionError(
        f"{factor}x the input ({size} -> {factor * size}) took {' / '.join(f'{r:.1f}x' for r in ratios)} the time "
        f"in {attempts} measurements; at most {max_ratio}x is allowed"
    )


def raising(call: Callable[[T], object], exception: type[BaseException] = ValueError) -> Callable[[T], object]:
    """A ``work`` for ``assert_growth``: ``call(input)``, which must raise ``exception``."""
    return lambda value: pytest.raises(exception, call, value)
