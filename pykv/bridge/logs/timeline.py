"""A timeline that stays bounded: past `max_samples` it halves itself, so a month of stats lines fits in memory.

Halving merges neighbours: the later sample's gauges stand for the pair and preemption counts add up, so
totals (preemptions, peaks kept by the caller) are never lost, only the time resolution.
"""

from __future__ import annotations

from pykv.bridge.base.records import Sample

MAX_SAMPLES = 20_000


class BoundedTimeline:
    def __init__(self, max_samples: int = MAX_SAMPLES) -> None:
        self.max_samples = max_samples
        self.samples: list[Sample] = []
        self.stride = 1  # how many original samples each kept one stands for
        self._pending: Sample | None = None  # at stride > 1, the partial group being merged
        self._pending_count = 0

    def add(self, sample: Sample) -> None:
        if self.stride == 1:
            self.samples.append(sample)
        else:
            self._pending = sample if self._pending is None else merge(self._pending, sample)
            self._pending_count += 1
            if self._pending_count == self.stride:
                self.samples.append(self._pending)
                self._pending, self._pending_count = None, 0
        if len(self.samples) >= self.max_samples:
            self._halve()

    def _halve(self) -> None:
        old = self.samples
        self.samples = [merge(old[i], old[i + 1]) if i + 1 < len(old) else old[i] for i in range(0, len(old), 2)]
        self.stride *= 2

    def finish(self) -> list[Sample]:
        if self._pending is not None:
            self.samples.append(self._pending)
            self._pending, self._pending_count = None, 0
        return self.samples


def merge(earlier: Sample, later: Sample) -> Sample:
    """The later sample, carrying the earlier one's preemptions (counts add; gauges are the latest reading)."""
    if earlier.preemptions is not None:
        later.preemptions = earlier.preemptions + (later.preemptions or 0)
    for name in ("running", "waiting", "swapped", "gpu_kv_usage", "cpu_kv_usage"):
        if getattr(later, name) is None:
            setattr(later, name, getattr(earlier, name))
    return later
