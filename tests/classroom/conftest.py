"""Class mode's rules on a clock the test moves (the stores and Classes take any callable as their clock)."""

from __future__ import annotations

import pytest


class FakeClock:
    """Seconds since the epoch, standing still until a test moves ``t`` (or calls ``advance``)."""

    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
