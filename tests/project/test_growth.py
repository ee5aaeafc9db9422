"""tests/growth.py's check fails quadratic work and passes linear and constant work, so the complexity guards built
on it can fail."""

from __future__ import annotations

import pytest
from growth import assert_growth, raising


def pairs(items: list[int]) -> int:
    return sum(1 for a in items for b in items if a < b)  # every pair: quadratic


def test_quadratic_work_fails_the_check():
    with pytest.raises(AssertionError, match=r"4x the input \(150 -> 600\) took"):
        assert_growth(lambda n: list(range(n)), pairs, 150, attempts=2)


def test_linear_and_constant_work_pass_it():
    assert_growth(lambda n: list(range(n)), sum, 100_000)
    assert_growth(lambda n: "x" * n, len, 1_000_000, factor=100, max_ratio=3)


def test_raising_needs_the_exception():
    raising(int)("x")
    with pytest.raises(pytest.fail.Exception):
        raising(int)("12")
