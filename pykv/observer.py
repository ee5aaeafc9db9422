"""After each step: update the engine's metrics and write its vLLM-style log lines.

The observer takes typed data, never the engine: what the step scheduled and cost, plus the per-step
deltas its producers hand over and reset (the ledger's re-prefill work, the KV manager's prefix-cache
stats), as vLLM V1's ``make_prefix_cache_stats()`` does. Nobody reads counters back from the registry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from pykv.costs import PreemptionCost, RecomputeStats
from pykv.kv_cache_manager import PrefixCacheStats
from pykv.metrics import EngineMetrics, logger, preemption_log_line, stats_log_line
from pykv.request import RequestOutput
from pykv.step_report import ScheduledChunk


@dataclass(frozen=True)
class StepOutcome:
    """One step's outcome, as the observer needs it."""

    step: int
    chunks: list[ScheduledChunk]
    num_sampled: int  # output tokens produced
    preempted: list[PreemptionCost]
    swapped_in: list[PreemptionCost]
    finished: list[RequestOutput]
    recompute: RecomputeStats  # re-prefill work charged this step
    prefix: PrefixCacheStats  # prefix-cache lookups this step
    total_preemptions: int  # the scheduler's cumulative count, after this step
    num_running: int
    num_waiting: int
    num_swapped: int
    gpu_usage: float  # device pool, 0-1
    cpu_usage: float  # CPU swap pool, 0-1 (0 when there is none)


class StepObserver:
    """Turns one step's outcome into metric updates and log lines (returned for the UI too)."""

    def __init__(self, metrics: EngineMetrics, log_stats_interval: Optional[int]) -> None:
        self.metrics = metrics
        self.log_stats_interval = log_stats_interval  # None: no stats lines
        self._window_start = time.perf_counter()
        self._window_prompt = self._window_generation = 0

    def after_step(self, o: StepOutcome) -> list[str]:
        m = self.metrics
        lines = []
        for cost in o.preempted:
            m.preemptions.inc()
            line = preemption_log_line(cost.request_id, cost.mode, cost.fallback, cost.reason, o.total_preemptions)
            logger.warning(line)
            lines.append(line)
            if cost.mode == "swap":
                m.swap_out_bytes.inc(cost.num_bytes)
                m.swap_out_seconds.inc(cost.swap_out_s or 0.0)
        for cost in o.swapped_in:
            m.swap_in_bytes.inc(cost.num_bytes)  # the same blocks come back
            m.swap_in_seconds.inc(cost.swap_in_s or 0.0)
        m.recomputed_tokens.inc(o.recompute.tokens)
        m.recompute_seconds.inc(o.recompute.seconds)
        m.prefix_queries.inc(o.prefix.queries)
        m.prefix_hits.inc(o.prefix.hits)
        m.prefix_hits_own.inc(o.prefix.hits_own)
        m.prefix_hits_shared.inc(o.prefix.hits_shared)
        for output in o.finished:
            m.request_preemptions.observe(output.num_preemptions)
        prompt_tokens = sum(c.num_new_tokens for c in o.chunks if c.is_prefill)
        m.prompt_tokens.inc(prompt_tokens)
        m.generation_tokens.inc(o.num_sampled)
        m.running.set(o.num_running)
        m.waiting.set(o.num_waiting)
        m.swapped.set(o.num_swapped)
        m.kv_usage.set(o.gpu_usage)
        m.cpu_usage.set(o.cpu_usage)
        self._window_prompt += prompt_tokens
        self._window_generation += o.num_sampled
        if self.log_stats_interval is not None and o.step % self.log_stats_interval == 0:
            lines.append(self._stats_line(o))
        return lines

    def _stats_line(self, o: StepOutcome) -> str:
        elapsed = max(time.perf_counter() - self._window_start, 1e-9)
        line = stats_log_line(o.num_running, o.num_swapped, o.num_waiting, o.gpu_usage, o.cpu_usage,
                              self._window_prompt / elapsed, self._window_generation / elapsed)
        logger.info(line)
        self._window_start = time.perf_counter()
        self._window_prompt = self._window_generation = 0
        return line
