"""Which vLLM release printed this: the exact version when the log says it, else the range its formats allow.

Every range below was read off the release wheels' source (vllm/engine/metrics.py, vllm/v1/metrics/loggers.py,
vllm/core/scheduler.py, vllm/executor/*, vllm/v1/core/kv_cache_utils.py, vllm/logger.py) for each release named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RELEASES = (
    "0.1.0",
    "0.1.3",
    "0.1.7",
    "0.2.0",
    "0.2.7",
    "0.3.3",
    "0.4.0",
    "0.4.1",
    "0.4.2",
    "0.4.3",
    "0.5.0",
    "0.5.4",
    "0.5.5",
    "0.6.0",
    "0.6.2",
    "0.6.3",
    "0.6.3.post1",
    "0.7.0",
    "0.7.3",
    "0.8.0",
    "0.8.2",
    "0.8.3",
    "0.8.5",
    "0.9.0",
    "0.9.1",
    "0.9.2",
    "0.10.0",
    "0.10.1",
    "0.10.2",
    "0.11.0",
    "0.11.1",
    "0.11.2",
    "0.12.0",
    "0.14.0",
    "0.20.0",
    "0.30.0",
    "0.31.0",
    "0.32.0",
    "0.33.0",
)
LAST = RELEASES[-1]

# feature -> (first release with it, last release with it, engine it implies or None)
FEATURES: dict[str, tuple[str, str, str | None]] = {
    # 0.1.2 core/scheduler.py:269 "Throughput: %.1f tokens/s, Running: ..."; 0.1.4 engine/llm_engine.py:394 has the
    # two averages (0.1.0, 0.1.1 and 0.1.3 publish sdists only, not read: the bounds hold whatever they print).
    "v0_stats_throughput_only": ("0.1.0", "0.1.3", "v0"),
    "v0_stats_no_period": ("0.1.3", "0.4.2", "v0"),  # metrics.py: "...CPU KV cache usage: %.1f%%" until 0.4.2
    "v0_stats_period": ("0.4.3", "0.10.2", "v0"),  # 0.4.3 metrics.py:346 adds the trailing "."
    "v0_preemption_warning": ("0.4.3", "0.10.2", "v0"),  # core/scheduler.py:1078 (0.4.3); V0 is gone in 0.11.0
    "v0_prefix_hit_line": ("0.5.5", "0.10.2", "v0"),  # engine/metrics.py:368 (0.5.5)
    "startup_blocks_gpu_named": ("0.1.0", "0.6.3.post1", "v0"),  # "# GPU blocks: %d, # CPU blocks: %d" (0.1.2 on)
    "startup_cpu_backend_blocks": ("0.4.1", "0.6.3.post1", "v0"),  # executor/cpu_executor.py "# CPU blocks: %d" alone
    "startup_blocks_device_named": ("0.7.0", "0.10.2", "v0"),  # executor_base.py: "# %s blocks" (device name)
    "startup_v1_blocks_only": ("0.7.0", "0.7.3", "v1"),  # v1/core/kv_cache_utils.py:522 "# GPU blocks: %d"
    "startup_v0_concurrency": ("0.6.3", "0.10.2", "v0"),  # gpu_executor.py:126 (0.6.3.post1)
    "startup_kv_tokens": ("0.8.0", LAST, "v1"),  # kv_cache_utils.py:634 (0.8.5) "GPU KV cache size: %s tokens"
    "startup_kv_tokens_one_line": ("0.30.0", LAST, "v1"),  # "%s KV cache size: %s tokens, Maximum concurrency..."
    "startup_kv_memory": ("0.9.0", LAST, None),  # v1/worker/gpu_worker.py:232 (0.9.2) "Available KV cache memory"
    "v1_stats_no_engine": ("0.7.0", "0.8.2", "v1"),  # v1/metrics/loggers.py:79 (0.7.3)
    "v1_stats_engine": ("0.8.3", LAST, "v1"),  # "Engine %03d: " prefix
    "v1_stats_aggregated": ("0.11.1", LAST, "v1"),  # "N Engines Aggregated: "
    "v1_stats_device_named": ("0.30.0", LAST, "v1"),  # loggers.py:293 (0.30.0) "%s KV cache usage"
    "prefix_bracketed": ("0.8.0", LAST, None),  # logger.py: "[%(filename)s:%(lineno)d]"
    "prefix_legacy": ("0.1.0", "0.7.3", None),  # logger.py: "%(filename)s:%(lineno)d]" (0.1.2 on)
    # engine/llm_engine.py "Initializing an LLM engine with config: ..." without its version (0.4.0 prints it): 0.1.x
    # has no max_seq_len (0.1.2, 0.1.4, 0.1.7), 0.2.0 adds it.
    "engine_config_no_max_seq_len": ("0.1.0", "0.1.7", "v0"),
    "engine_config_unversioned": ("0.2.0", "0.3.3", "v0"),  # with max_seq_len, without the version
    # v1/metrics/loggers.py LoggingStatLogger.log fields printed only when they have something to say:
    "v1_stats_external_prefix_hit": ("0.11.1", LAST, "v1"),  # "External prefix cache hit rate" (a KV connector)
    "v1_stats_mm_cache_hit": ("0.11.1", LAST, "v1"),  # "MM cache hit rate" (multi-modal inputs)
    "v1_stats_corrupted": ("0.11.1", LAST, "v1"),  # "Corrupted: %d reqs" (VLLM_COMPUTE_NANS_IN_LOGITS)
    "v1_stats_deferred": ("0.20.0", LAST, "v1"),  # "Deferred: %d reqs" (waiting requests skipped)
    "v1_stats_kv_fetch": ("0.32.0", LAST, "v1"),  # "KV fetch: %d waiting to start, ..."
    "v1_mfu_line": ("0.14.0", LAST, "v1"),  # v1/metrics/perf.py PerfMetricsLogging "MFU: %.1f TF/s/device ..."
    # log_engine_initialized "vllm cache_config_info with initialization after num_gpu_blocks is: %d": bare at INFO
    # (0.9.0; 0.8.5 has none; 0.9.0.1 not read), "Engine %03d: " at INFO (0.9.1-0.11.0), DEBUG after;
    # "%d Engines: " (0.11.1+).
    "startup_num_gpu_blocks_bare": ("0.9.0", "0.9.0", "v1"),
    "startup_num_gpu_blocks_engine": ("0.9.1", LAST, "v1"),
    "startup_num_gpu_blocks_engines": ("0.11.1", LAST, "v1"),
    "prefix_relative_path": ("0.10.2", LAST, None),  # logger.py: "[%(fileinfo)s:%(lineno)d]"
    "metric:vllm:avg_prompt_throughput_toks_per_s": ("0.2.0", "0.6.3.post1", "v0"),
    "metric:vllm:num_requests_swapped": ("0.2.0", "0.10.2", "v0"),
    "metric:vllm:cpu_cache_usage_perc": ("0.2.0", "0.10.2", "v0"),
    "metric:vllm:kv_cache_usage_perc": ("0.9.2", LAST, "v1"),
    "metric:vllm:prefix_cache_queries_total": ("0.9.2", LAST, "v1"),
    "metric:vllm:request_num_preemptions_bucket": ("0.30.0", LAST, "v1"),
    "metric:vllm:num_requests_waiting_by_reason": ("0.20.0", LAST, "v1"),  # gauge_waiting_by_reason
    "metric_label:engine": ("0.8.3", LAST, "v1"),  # PrometheusStatLogger labelnames ["model_name", "engine"]
    # A stats line's "Preemptions: N". v1/metrics/loggers.py has the format from 0.11.1 (through 0.34.0), but
    # LoggingStatLogger.log calls _update_stats(), whose _reset() zeroes num_preemptions before the
    # `if self.num_preemptions > 0` that would print it: no release prints it. A line that has it comes from a build
    # patched on 0.11.1 or later (or a later release), so it raises the low end only (the log parser says so).
    "stats_preemptions_field": ("0.11.1", LAST, "v1"),
}
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def release_key(version: str) -> tuple[int, int, int, int]:
    match = _VERSION.match(version)
    if not match:
        return (0, 0, 0, 0)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3)), 1 if ".post" in version else 0)


@dataclass
class ReleaseGuess:
    text: str  # "0.6.3.post1 (printed by the server)" or "V0, 0.4.3-0.10.2"
    engine: str | None
    low: str | None  # the range, inclusive (None: nothing told)
    high: str | None
    exact: bool = False

    def at_least(self, version: str) -> bool | None:
        """True/False when the whole range is on one side of `version`; None when it straddles."""
        if self.low is None or self.high is None:
            return None
        if release_key(self.low) >= release_key(version):
            return True
        if release_key(self.high) < release_key(version):
            return False
        return None


def guess_release(features: set[str], printed_version: str | None, engine_hint: str | None) -> ReleaseGuess:
    engines = {FEATURES[f][2] for f in features if f in FEATURES and FEATURES[f][2]}
    engine = engine_hint or (engines.pop() if len(engines) == 1 else None)
    if printed_version:
        if engine is None and release_key(printed_version) >= release_key("0.11.0"):
            engine = "v1"
        elif engine is None and release_key(printed_version) < release_key("0.7.0"):
            engine = "v0"
        return ReleaseGuess(
            f"{printed_version} (printed by the server)", engine, printed_version, printed_version, exact=True
        )
    low, high = RELEASES[0], LAST
    for feature in features:
        if feature not in FEATURES:
            continue
        first, last, _ = FEATURES[feature]
        if release_key(first) > release_key(low):
            low = first
        if release_key(last) < release_key(high):
            high = last
    if engine == "v0" and release_key(high) > release_key("0.10.2"):
        high = "0.10.2"
    if engine == "v1" and release_key(low) < release_key("0.7.0"):
        low = "0.7.0"
    label = engine.upper() + ", " if engine else ""
    if release_key(low) > release_key(high):  # formats of two eras in one input (an upgrade mid-log)
        return ReleaseGuess(f"{label}mixed releases (formats of {high} and {low})", engine, None, None)
    if (low, high) == (RELEASES[0], LAST):
        return ReleaseGuess(f"{label}unknown release", engine, None, None)
    span = low if low == high else f"{low}-{high}"
    return ReleaseGuess(f"{label}{span}", engine, low, high)
