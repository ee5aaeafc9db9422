"""After each step: update the engine's metrics and write its log lines, as the profile's vLLM release does.

The observer takes typed data, never the engine: what the step scheduled and cost, plus the per-step
deltas its producers hand over and reset (the ledger's re-prefill work, the KV manager's prefix-cache
stats, the preemptions V1 reports this step), as vLLM V1's ``make_prefix_cache_stats()`` does. Nobody
reads counters back from the registry.

pykv's clock is the step, not the second: a stats line comes every ``log_stats_interval`` steps, or
every ``log_stats_interval_s`` seconds of *measured* engine time (vLLM's timer: 5 s in V0, 10 s in V1).
Its throughputs divide by that engine time too (vLLM divides by the wall time since its last line: in a
lab stepped by hand, the pauses between clicks would drown the figure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from pykv.border.config import EngineConfig
from pykv.border.request import RequestOutput
from pykv.border.step_report import OffloadTransfer, ScheduledChunk
from pykv.engine.kv.prefix_stats import PrefixCacheStats
from pykv.engine.observe.costs import PreemptionCost, RecomputeStats, recompute_tax
from pykv.engine.observe.metrics import (
    EngineMetrics,
    StatsWindow,
    logger,
    preemption_log_line,
    pykv_preemption_note,
    sglang_retract_line,
    stats_log_lines,
)
from pykv.engine.sched.scheduler import OutputEvents


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
    offload: list[OffloadTransfer]  # copies to and from the CPU offloading tier this step
    prefix: PrefixCacheStats  # prefix-cache lookups this step
    total_preemptions: int  # the scheduler's cumulative count, after this step
    output_events: OutputEvents  # what V1 learns from this step's outputs (delivered preemptions, first prompts)
    step_time_s: float  # measured wall time of the step so far
    num_running: int
    num_waiting: int
    num_swapped: int
    gpu_usage: float  # device pool, 0-1
    cpu_usage: float  # CPU swap pool, 0-1 (0 when there is none)


class StepObserver:
    """Turns one step's outcome into metric updates and log lines (returned for the UI too)."""

    def __init__(self, metrics: EngineMetrics, config: EngineConfig) -> None:
        self.metrics = metrics
        self.profile = config.profile
        self.every_steps = config.log_stats_interval  # None: no stats lines by step count
        self.every_s = config.log_stats_interval_s  # None: no timed stats lines
        self.prefix_caching = config.enable_prefix_caching
        self.device_name = "GPU" if config.device.startswith("cuda") else "CPU"
        self.sglang_victims = config.preemption_victim == "sglang"
        self.block_size = config.block_size
        self._queries = self._hits = 0  # what the release's prefix-cache counters count, so far
        self._new_window()

    def _new_window(self) -> None:
        self._window_engine_s = 0.0
        self._window_prompt = self._window_generation = self._window_preemptions = 0

    def after_step(self, o: StepOutcome) -> list[str]:
        lines = self._preemptions(o)
        retracted = [c for c in o.preempted if c.mode != "abort"]
        if self.sglang_victims and retracted:
            line = sglang_retract_line(len(retracted), sum(c.num_blocks for c in retracted) * self.block_size)
            logger.warning(line)
            lines.append(line)
        self._counters(o)
        self._window_engine_s += o.step_time_s
        due = (self.every_steps is not None and o.step % self.every_steps == 0) or \
              (self.every_s is not None and self._window_engine_s > self.every_s)  # V0's strict ">"
        if due:
            lines += self._stats_lines(o)
        return lines

    def _preemptions(self, o: StepOutcome) -> list[str]:
        m, p, lines = self.metrics, self.profile, []
        first = o.total_preemptions - len(o.preempted)  # the count before this step
        for i, cost in enumerate(o.preempted):
            m.pykv_preemptions.inc()
            if p.preemption_warning_every and cost.mode != "abort" and (first + i) % p.preemption_warning_every == 0:
                line = preemption_log_line(cost.request_id, cost.mode, first + i + 1)
                logger.warning(line)
                lines.append(line)
            note = pykv_preemption_note(cost.request_id, cost.mode, cost.fallback, cost.reason)
            if note:
                logger.warning(note)
                lines.append(note)
            if cost.mode == "swap":
                m.swap_out_bytes.inc(cost.num_bytes)
                m.swap_out_seconds.inc(cost.swap_out_s or 0.0)
        # pykv's aborts (livelock guard, swap_fallback="abort") are no vLLM preemption.
        reported = sum(c.mode != "abort" for c in o.preempted) if p.is_v0 else o.output_events.delivered_preemptions
        m.preemptions.inc(reported)
        self._window_preemptions += reported
        for cost in o.swapped_in:
            m.swap_in_bytes.inc(cost.num_bytes)  # the same blocks come back
            m.swap_in_seconds.inc(cost.swap_in_s or 0.0)
        return lines

    def _counters(self, o: StepOutcome) -> None:
        m, p, pc = self.metrics, self.profile, o.prefix
        m.recomputed_tokens.inc(o.recompute.tokens)
        m.recompute_seconds.inc(o.recompute.seconds)
        m.prefill_seconds.inc(o.recompute.prefill_seconds)
        if p.has_kv_offloading:
            self._offload(o)
        m.prefix_queries_all.inc(pc.queries)  # pykv's: one lookup per admission, in every profile
        m.prefix_hits_own.inc(pc.hits_own)
        m.prefix_hits_shared.inc(pc.hits_shared)
        queries, hits = pc.queries, pc.hits  # what this release's vllm:prefix_cache_* count
        if p.prefix_stats_skip_preempted:
            queries, hits = queries - pc.preempted_queries, hits - pc.preempted_hits
        if p.prefix_stats_count_unadmitted:
            queries, hits = queries + pc.unadmitted_queries, hits + pc.unadmitted_hits
        self._queries, self._hits = self._queries + queries, self._hits + hits
        for output in o.finished:
            m.request_preemptions.observe(output.num_preemptions)
            if p.has_request_preemptions_histogram:
                m.vllm_request_preemptions.observe(output.num_preemptions)
        computed = sum(c.num_new_tokens for c in o.chunks if c.is_prefill)
        m.prefill_tokens.inc(computed)
        # the recompute tax so far, from the counters: re-prefilled share of prefill tokens, and of prefill time
        m.recompute_tax.set(recompute_tax(m.value("pykv:recomputed_tokens_total"),
                                          m.value("pykv:prefill_tokens_total")) or 0.0)
        m.recompute_tax_time.set(recompute_tax(m.value("pykv:recompute_seconds_total"),
                                               m.value("pykv:prefill_seconds_total")) or 0.0)
        if p.prompt_tokens_include_reprefill:  # V0: every prefill chunk, its cached tokens included
            prompt = sum(c.num_new_tokens + c.num_cached_tokens for c in o.chunks if c.is_prefill)
        else:  # V1: each request's prompt once, when its first token comes
            prompt = o.output_events.first_token_prompts
        m.prompt_tokens.inc(prompt)
        m.generation_tokens.inc(o.num_sampled)
        m.running.set(o.num_running)
        m.waiting.set(o.num_waiting)
        m.kv_usage.set(o.gpu_usage)
        if p.is_v0:
            m.swapped.set(o.num_swapped)
            m.cpu_usage.set(o.cpu_usage)
            rate = self._hit_rate()
            m.prefix_hit_rate.set(-1.0 if rate is None else rate)
            m.cpu_prefix_hit_rate.set(-1.0 if rate is None else 0.0)
        else:
            m.prefix_queries.inc(queries)
            m.prefix_hits.inc(hits)
        # 0.33's line counts the prompt tokens computed (_track_iteration_stats); older lines, the counter's.
        self._window_prompt += computed if p.stats_format == "v0.33" else prompt
        self._window_generation += o.num_sampled

    def _offload(self, o: StepOutcome) -> None:
        m, pc = self.metrics, o.prefix
        m.external_queries.inc(pc.external_queries)
        m.external_hits.inc(pc.external_hits)
        m.offload_loaded_tokens.inc(sum(c.num_loaded_tokens for c in o.chunks))
        for t in o.offload:
            (m.offload_store_bytes if t.direction == "store" else m.offload_load_bytes).inc(t.num_bytes)
            (m.offload_store_time if t.direction == "store" else m.offload_load_time).inc(t.seconds)

    def _hit_rate(self) -> Optional[float]:
        if not self.prefix_caching:
            return None
        return self._hits / self._queries if self._queries else 0.0

    def _stats_lines(self, o: StepOutcome) -> list[str]:
        elapsed = max(self._window_engine_s, 1e-9)
        window = StatsWindow(
            running=o.num_running, waiting=o.num_waiting, swapped=o.num_swapped, gpu_usage=o.gpu_usage,
            cpu_usage=o.cpu_usage, prompt_tps=self._window_prompt / elapsed,
            generation_tps=self._window_generation / elapsed, preemptions=self._window_preemptions,
            prefix_hit_rate=self._hit_rate(), device_name=self.device_name)
        lines = stats_log_lines(self.profile.stats_format, window)
        for line in lines:
            logger.info(line)
        self._new_window()
        return lines
