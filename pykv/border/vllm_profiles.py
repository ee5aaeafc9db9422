"""The vLLM releases pykv can follow, rule by rule (``EngineConfig.vllm_profile``).

Each profile is named by the release whose code it transcribes, and fixes what differs among them
when the KV cache runs out: the scheduling order, what an admission reserves, the watermark, which
preemption modes exist, what happens to a request too long for the cache, the log lines and the
exported metrics. The README's "How it follows vLLM" table cites the vLLM file and function behind
each field. Pure data: the scheduler, the observer and the metrics read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VllmProfileName = Literal["v0.6", "v0.10", "v0.33"]
DEFAULT_PROFILE: VllmProfileName = "v0.33"


@dataclass(frozen=True)
class VllmProfile:
    name: str
    release: str  # the release whose source the profile follows
    engine: str  # "V0" or "V1"
    summary: str  # one line for status lines and log headers
    preemption_modes: tuple[str, ...]  # the preemption_mode values the release has
    # What an admission must find free: "whole_prompt" (V0: blocks for every token, at once),
    # "chunk" (V1 0.10: the scheduled chunk only), "full_input" (today's V1: the whole current input
    # reserved before admission, scheduler_reserve_full_isl=True).
    admission: str
    default_watermark: float | None  # None: the release has no watermark knob
    # Where the watermark applies: "v0" (every admission and swap-in, always) or "v1" (waiting and
    # preempted admissions while something is scheduled).
    watermark_scope: str | None
    preemption_warning_every: int | None  # V0 warns on the 1st, 51st, 101st... preemption; V1 never
    stats_format: str  # "v0" | "v0.10" | "v0.33": the periodic stats line's wording
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

    @property
    def is_v0(self) -> bool:
        return self.engine == "V0"

    def label(self) -> str:
        return f"{self.name} (vLLM {self.release}, {self.engine})"


PROFILES: dict[str, VllmProfile] = {
    "v0.6": VllmProfile(
        name="v0.6",
        release="0.6.3.post1",
        engine="V0",
        summary="V0 scheduler and block manager: swap or recompute, whole-prompt admission, 1% watermark",
        preemption_modes=("recompute", "swap", "auto"),
        admission="whole_prompt",
        default_watermark=0.01,
        watermark_scope="v0",
        preemption_warning_every=50,
        stats_format="v0",
        prompt_tokens_include_reprefill=True,
        prefix_stats_skip_preempted=False,
        prefix_stats_count_unadmitted=False,
        has_request_preemptions_histogram=False,
        queues_count_groups=True,
    ),
    "v0.10": VllmProfile(
        name="v0.10",
        release="0.10.2",
        engine="V1",
        summary="V1 as it first shipped: recompute only, an admission allocates its first chunk only",
        preemption_modes=("recompute",),
        admission="chunk",
        default_watermark=None,
        watermark_scope=None,
        preemption_warning_every=None,
        stats_format="v0.10",
        prompt_tokens_include_reprefill=False,
        prefix_stats_skip_preempted=False,
        prefix_stats_count_unadmitted=True,
        has_request_preemptions_histogram=False,
        null_block=True,
        deprecated_v0_cache_metrics=True,
        victim_chunk_taken_back=False,
        scan_past_self_preemption=False,
    ),
    "v0.33": VllmProfile(
        name="v0.33",
        release="0.33.0",
        engine="V1",
        summary="today's V1: recompute only, the full input reserved before admission, admission watermark, the "
        "synchronous scheduler (0.33.0 schedules asynchronously by default)",
        preemption_modes=("recompute",),
        admission="full_input",
        default_watermark=0.0,
        watermark_scope="v1",
        preemption_warning_every=None,
        stats_format="v0.33",
        prompt_tokens_include_reprefill=False,
        prefix_stats_skip_preempted=True,
        prefix_stats_count_unadmitted=False,
        has_request_preemptions_histogram=True,
        has_kv_offloading=True,
        null_block=True,
        free_unhashed_first=True,
        async_scheduling_default=True,
        stats_prompt_computed_once=True,
    ),
}


def profile(name: str) -> VllmProfile:
    return PROFILES[name]


def victim_caveat(profile_name: str, victim: str) -> str | None:
    """What a learner must know before trusting tokens under this victim policy on this release, or None."""
    if victim == "last" or profile(profile_name).victim_chunk_taken_back:
        return None
    return (
        f"On {profile_name}, preemption_victim={victim} can change tokens: vLLM {profile(profile_name).release} "
        "resumes a victim preempted after it was scheduled past KV it never computed (fixed in 0.11.1, PR "
        "#26661). pykv does the same; the narration says when."
    )
