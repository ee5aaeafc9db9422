"""After each step: update the engine's metrics and write its log lines, as the profile's vLLM release does.

The observer takes typed data, never the engine: what the step scheduled and cost, plus the per-step
deltas its producers hand over and reset (the ledger's re-prefill work, the KV manager's prefix-cache
stats, the preemptions V1 reports this step), as vLLM V1's ``make_prefix_cache_stats()`` does. It keeps its
own running totals (``EngineTotals``) and sets the Prometheus metrics from them: nobody reads counters back
from the registry.

pykv's clock is the step, not the second: a stats line comes every ``log_stats_interval`` steps, or
every ``log_stats_interval_s`` seconds of *measured* engine time (vLLM's timer: 5 s in V0, 10 s in V1).
Its throughputs divide by that engine time too (vLLM divides by the wall time since its last line: in a
lab stepped by hand, the pauses between clicks would drown the figure).
"""

from __future__ import annotations

from dataclasses import dataclass

from pykv.border import metric_names as names
from pykv.border.config import EngineConfig
from pykv.border.metric_names import DEPRECATED_TWIN, kv_usage
from pykv.border.request import RequestOutput
from pykv.border.step_report import OffloadTransfer, PreemptionView, ScheduledChunk
from pykv.engine.kv.prefix_stats import PrefixCacheStats
from pykv.engine.observe.costs import RecomputeStats
from pykv.engine.observe.metrics import (
    EngineMetrics,
    StatsWindow,
    logger,
    preemption_log_line,
    pykv_preemption_note,
    sglang_retract_line,
    stats_log_lines,
)
from pykv.engine.observe.totals import COUNTER_OF, EngineTotals
from pykv.engine.sched.scheduler import OutputEvents


@dataclass(frozen=True)
class StepOutcome:
    """One step's outcome, as the observer needs it."""

    step: int
    chunks: list[ScheduledChunk]
    num_sampled: int  # output tokens produced
    preempted: list[PreemptionView]
    swapped_in: list[PreemptionView]
    finished: list[RequestOutput]
    recompute: RecomputeStats  # re-prefill work charged this step
    offload: list[OffloadTransfer]  # copies to and from the CPU offloading tier this step
    offload_refused: int  # store batches the tier refused whole this step
    prefix: PrefixCacheStats  # prefix-cache lookups this step
    total_preemptions: int  # the scheduler's cumulative count, after this step
    output_events: OutputEvents  # what V1 learns from this step's outputs (delivered preemptions, first prompts)
    step_time_s: float  # measured wall time of the step so far
    num_running: int  # the queues as the release's gauges count them (V0: sequence groups)
    num_waiting: int
    num_swapped: int
    gpu_usage: float  # device pool, 0-1
    cpu_usage: float  # CPU swap pool, 0-1 (0 when there is none)


class StepObserver:
    """Turns one step's outcome into its running totals, metric updates and log lines (returned for the UI too).

    The rule: each step's outcome becomes one ``EngineTotals`` delta; the totals add it and the Prometheus
    counters take it (``COUNTER_OF``), so the registry always equals ``totals`` and nobody reads it back."""

    def __init__(self, metrics: EngineMetrics, config: EngineConfig) -> None:
        self.metrics = metrics
        self.profile = config.profile
        self.every_steps = config.log_stats_interval  # None: no stats lines by step count
        self.every_s = config.log_stats_interval_s  # None: no timed stats lines
        self.prefix_caching = config.enable_prefix_caching
        self.device_name = "GPU" if config.device.startswith("cuda") else "CPU"
        self.sglang_victims = config.preemption_victim == "sglang"
        self.block_size = config.block_size
        self.totals = EngineTotals()  # since the engine started; changed by after_step only
        self._last_window_active = False  # the last stats window had throughput (V1's idle rule)
        self._new_window()

    def _new_window(self) -> None:
        self._window_engine_s = 0.0
        self._window_prompt = self._window_generation = 0
        self._window_transfers: dict[str, float] = {}  # the offloading tier's copies, by vLLM's key, first come first

    def _add_transfers(self, o: StepOutcome) -> None:
        """The step's tier copies, as 0.33.0's OffloadingConnector scheduler adds them (_update_connector_output:
        load bytes, time and sizes, then store)."""
        w = self._window_transfers
        for direction in ("load", "store"):
            copies = [t for t in o.offload if t.direction == direction]
            if not copies:
                continue
            key = f"vllm:kv_offload_{direction}"
            num_bytes = sum(t.num_bytes for t in copies)
            for name, value in (
                (f"{key}_bytes", num_bytes),
                (f"{key}_time", sum(t.seconds for t in copies)),
                (f"{key}_size_count", len(copies)),
                (f"{key}_size_sum", num_bytes),
            ):
                w[name] = w.get(name, 0) + value

    def after_step(self, o: StepOutcome) -> list[str]:
        lines = self._preemption_lines(o)
        retracted = [c for c in o.preempted if c.mode != "abort"]
        if self.sglang_victims and retracted:
            line = sglang_retract_line(len(retracted), sum(c.num_blocks for c in retracted) * self.block_size)
            logger.warning(line)
            lines.append(line)
        delta = self._delta(o)
        self.totals = self.totals.plus(delta)
        self._publish(delta, o)
        # 0.33's line counts each prompt's tokens computed at its first admission, at its first token
        # (_track_iteration_stats); older lines, what vllm:prompt_tokens counts.
        self._window_prompt += (
            o.output_events.first_token_computed_prompts
            if self.profile.stats_prompt_computed_once
            else delta.prompt_tokens
        )
        self._window_generation += delta.generation_tokens
        self._window_engine_s += o.step_time_s
        self._add_transfers(o)
        due = (self.every_steps is not None and o.step % self.every_steps == 0) or (
            self.every_s is not None and self._window_engine_s > self.every_s
        )  # V0's strict ">"
        if due:
            lines += self._stats_lines(o)
        return lines

    def _preemption_lines(self, o: StepOutcome) -> list[str]:
        p, lines = self.profile, []
        first = o.total_preemptions - len(o.preempted)  # the count before this step
        for i, cost in enumerate(o.preempted):
            if p.preemption_warning_every and cost.mode != "abort" and (first + i) % p.preemption_warning_every == 0:
                line = preemption_log_line(cost.request_id, cost.mode, first + i + 1)
                logger.warning(line)
                lines.append(line)
            note = pykv_preemption_note(cost.request_id, cost.mode, cost.fallback, cost.reason)
            if note:
                logger.warning(note)
                lines.append(note)
        return lines

    def _delta(self, o: StepOutcome) -> EngineTotals:
        """This step's additions to every total."""
        p, pc = self.profile, o.prefix
        swaps = [c for c in o.preempted if c.mode == "swap"]
        # pykv's aborts (livelock guard, swap_fallback="abort") are no vLLM preemption.
        reported = (
            o.output_events.delivered_preemptions
            if p.preemptions_counted_at_output
            else sum(c.mode != "abort" for c in o.preempted)
        )
        queries, hits = pc.queries, pc.hits  # what this release's vllm:prefix_cache_* count
        if p.prefix_stats_skip_preempted:
            queries, hits = queries - pc.preempted_queries, hits - pc.preempted_hits
        if p.prefix_stats_count_unadmitted:
            queries, hits = queries + pc.unadmitted_queries, hits + pc.unadmitted_hits
        if p.prompt_tokens_include_reprefill:  # V0: every prefill chunk, its cached tokens included
            prompt = sum(c.num_new_tokens + c.num_cached_tokens for c in o.chunks if c.is_prefill)
        else:  # V1: each request's prompt once, when its first token comes
            prompt = o.output_events.first_token_prompts
        offload = p.has_kv_offloading
        stores = [t for t in o.offload if t.direction == "store"]
        loads = [t for t in o.offload if t.direction == "load"]
        return EngineTotals(
            preemptions=len(o.preempted),
            release_preemptions=reported,
            prompt_tokens=prompt,
            generation_tokens=o.num_sampled,
            prefill_tokens=sum(c.num_new_tokens for c in o.chunks if c.is_prefill and not c.orphaned),
            prefix_queries=pc.queries,
            prefix_hits_own=pc.hits_own,
            prefix_hits_shared=pc.hits_shared,
            release_prefix_queries=queries,
            release_prefix_hits=hits,
            recomputed_tokens=o.recompute.tokens,
            recompute_s=o.recompute.seconds,
            prefill_s=o.recompute.prefill_seconds,
            swapped_out_bytes=sum(c.num_bytes for c in swaps),
            swap_out_s=sum(c.swap_out_s or 0.0 for c in swaps),
            swapped_in_bytes=sum(c.num_bytes for c in o.swapped_in),  # the same blocks come back
            swap_in_s=sum(c.swap_in_s or 0.0 for c in o.swapped_in),
            external_queries=pc.external_queries if offload else 0,
            external_hits=pc.external_hits if offload else 0,
            offload_loaded_tokens=sum(c.num_loaded_tokens for c in o.chunks) if offload else 0,
            offload_store_bytes=sum(t.num_bytes for t in stores),
            offload_store_s=sum(t.seconds for t in stores),
            offload_load_bytes=sum(t.num_bytes for t in loads),
            offload_load_s=sum(t.seconds for t in loads),
            offload_refused=o.offload_refused,
        )

    def _publish(self, delta: EngineTotals, o: StepOutcome) -> None:
        """Set the Prometheus metrics from the totals: counters take the delta, gauges the state now."""
        m, p, t = self.metrics, self.profile, self.totals
        for total, metric in COUNTER_OF.items():
            amount = getattr(delta, total)
            for series in (metric, DEPRECATED_TWIN.get(metric)):
                if amount and series is not None and m.exports(series):
                    m.inc(series, amount)
        for output in o.finished:
            m.observe(names.REQUEST_PREEMPTIONS, output.num_preemptions)
            if m.exports(names.VLLM_REQUEST_PREEMPTIONS):
                m.observe(names.VLLM_REQUEST_PREEMPTIONS, output.num_preemptions)
        m.set(names.RECOMPUTE_TAX, t.recompute_tax or 0.0)  # the gauge reads 0 before any prefill
        m.set(names.RECOMPUTE_TAX_TIME, t.recompute_tax_time or 0.0)
        m.set(names.NUM_REQUESTS_RUNNING, o.num_running)
        m.set(names.NUM_REQUESTS_WAITING, o.num_waiting)
        m.set(kv_usage(p), o.gpu_usage)
        twin = DEPRECATED_TWIN.get(kv_usage(p))
        if twin is not None and m.exports(twin):  # 0.10.2's deprecated vllm:gpu_cache_usage_perc, the same value
            m.set(twin, o.gpu_usage)
        if m.exports(names.NUM_REQUESTS_SWAPPED):  # V0's pool gauges
            m.set(names.NUM_REQUESTS_SWAPPED, o.num_swapped)
            m.set(names.CPU_CACHE_USAGE, o.cpu_usage)
            rate = self._hit_rate()
            m.set(names.GPU_PREFIX_HIT_RATE, -1.0 if rate is None else rate)  # vLLM's own -1: caching off
            m.set(names.CPU_PREFIX_HIT_RATE, -1.0 if rate is None else 0.0)

    def _hit_rate(self) -> float | None:
        if not self.prefix_caching:
            return None
        t = self.totals
        return t.release_prefix_hits / t.release_prefix_queries if t.release_prefix_queries else 0.0

    def _external_hit_rate(self) -> float | None:
        """The offloading tier's hit rate over its lookups so far (0.33.0's connector CachingMetrics; re-admissions
        left out, as the totals count them); None before any lookup, when 0.33 prints none."""
        t = self.totals
        if not self.profile.has_kv_offloading or not t.external_queries:
            return None
        return t.external_hits / t.external_queries

    def _stats_lines(self, o: StepOutcome) -> list[str]:
        elapsed = max(self._window_engine_s, 1e-9)
        window = StatsWindow(
            running=o.num_running,
            waiting=o.num_waiting,
            swapped=o.num_swapped,
            gpu_usage=o.gpu_usage,
            cpu_usage=o.cpu_usage,
            prompt_tps=self._window_prompt / elapsed,
            generation_tps=self._window_generation / elapsed,
            prefix_hit_rate=self._hit_rate(),
            device_name=self.device_name,
            external_hit_rate=self._external_hit_rate(),
            transfers=dict(self._window_transfers),
        )
        active = bool(self._window_prompt or self._window_generation)
        idle, self._last_window_active = not active and not self._last_window_active, active
        lines = (
            [] if idle and self.profile.stats_line.quiet_when_idle else stats_log_lines(self.profile.stats_line, window)
        )
        for line in lines:  # none when V1 logs it at DEBUG: not in a server's log
            logger.info(line)
        self._new_window()
        return lines
