"""After each step: update the engine's metrics and write its vLLM-style log lines."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pykv.costs import PreemptionCost
from pykv.metrics import logger, preemption_log_line, stats_log_line
from pykv.model_runner import RunResult
from pykv.request import RequestOutput
from pykv.scheduler import SchedulerOutput

if TYPE_CHECKING:
    from pykv.engine import LLMEngine


class StepObserver:
    """Turns one step's outcome into metric updates and log lines (returned for the UI too)."""

    def __init__(self, engine: "LLMEngine") -> None:
        self.engine = engine
        self._seen_prefix = (0, 0, 0, 0)  # kv manager's cumulative prefix counters already exported
        self._window_start = time.perf_counter()
        self._window_prompt = self._window_generation = 0

    def after_step(self, out: SchedulerOutput, result: RunResult, preempted: list[PreemptionCost],
                   finished: list[RequestOutput]) -> list[str]:
        engine, m = self.engine, self.engine.metrics
        sched, kv = engine.scheduler, engine.kv
        lines = []
        for cost in preempted:
            m.preemptions.inc()
            line = preemption_log_line(cost, sched.num_preemptions)
            logger.warning(line)
            lines.append(line)
            if cost.mode == "swap":
                m.swap_out_bytes.inc(cost.num_bytes)
                m.swap_out_seconds.inc(cost.swap_out_s or 0.0)
        for request_id, mapping in out.swap_in.items():
            cost = next(c for c in reversed(engine.ledger.records) if c.request_id == request_id)
            m.swap_in_bytes.inc(len(mapping) * engine.bytes_per_block)
            m.swap_in_seconds.inc(cost.swap_in_s or 0.0)
        redone_tokens = sum(c.recomputed_tokens for c in engine.ledger.records)
        redone_s = sum(c.recompute_s for c in engine.ledger.records)
        m.recomputed_tokens.inc(redone_tokens - m.value("pykv:recomputed_tokens_total"))
        m.recompute_seconds.inc(max(0.0, redone_s - m.value("pykv:recompute_seconds_total")))
        counters = (kv.prefix_queries, kv.prefix_hits, kv.prefix_hits_own, kv.prefix_hits_shared)
        for counter, now, before in zip(
            (m.prefix_queries, m.prefix_hits, m.prefix_hits_own, m.prefix_hits_shared), counters, self._seen_prefix
        ):
            counter.inc(now - before)
        self._seen_prefix = counters
        for output in finished:
            m.request_preemptions.observe(output.num_preemptions)
        prompt_tokens = sum(c.num_new_tokens for c in out.chunks if c.is_prefill)
        m.prompt_tokens.inc(prompt_tokens)
        m.generation_tokens.inc(len(result.sampled))
        m.running.set(len(sched.running))
        m.waiting.set(len(sched.waiting))
        m.swapped.set(len(sched.swapped))
        m.kv_usage.set(kv.pool.usage())
        m.cpu_usage.set(kv.cpu_pool.usage() if kv.cpu_pool.num_blocks else 0.0)
        self._window_prompt += prompt_tokens
        self._window_generation += len(result.sampled)
        if engine.step_count % engine.config.log_stats_interval == 0:
            lines.append(self._stats_line())
        return lines

    def _stats_line(self) -> str:
        engine = self.engine
        elapsed = max(time.perf_counter() - self._window_start, 1e-9)
        kv = engine.kv
        line = stats_log_line(
            len(engine.scheduler.running), len(engine.scheduler.swapped), len(engine.scheduler.waiting),
            kv.pool.usage(), kv.cpu_pool.usage() if kv.cpu_pool.num_blocks else 0.0,
            self._window_prompt / elapsed, self._window_generation / elapsed,
        )
        logger.info(line)
        self._window_start = time.perf_counter()
        self._window_prompt = self._window_generation = 0
        return line
