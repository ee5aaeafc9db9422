"""Recognises one log message: the periodic stats line, V0's preemption warning, start-up capacity, config dumps.

Fields are read by name, not by position, so a release that adds, drops or reorders a field still parses
(0.30 names the device in `GPU KV cache usage`, 0.33 drops an empty prefix hit rate). `Preemptions: N` is read
too, though no release prints it (0.11.1 to 0.34.0 zero the count before the check: release_guess.py says how):
a patched or later build's line keeps its count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pykv.bridge.base.numbers import MAX_COUNT, MAX_GIB, MAX_RATE, bounded_float, bounded_int

_NUM = r"(\d+(?:\.\d+)?)"
_STAT_FIELD = re.compile(
    r"(Avg prompt throughput|Avg generation throughput|Running|Swapped|Pending|Waiting|Preemptions"
    r"|Prefix cache hit rate|(?:([A-Za-z]{2,8}) )?KV cache usage): " + _NUM + r"(%?)"
)
_ENGINE = re.compile(r"Engine (\d{1,4}):")
_AGGREGATED = re.compile(r"(\d{1,4}) Engines Aggregated:")
_V0_PREFIX_HIT = re.compile(r"Prefix cache hit rate: GPU: " + _NUM + r"%, CPU: " + _NUM + "%")
_PREEMPTED = re.compile(r"Sequence group (\S{1,200}) is preempted by (?:PreemptionMode\.)?(RECOMPUTE|SWAP) mode")
_CUMULATIVE = re.compile(r"total_num_cumulative_preemption=(\d+)")
# "# GPU blocks: N, # CPU blocks: M" (0.2-0.6), "# cuda blocks: N, # CPU blocks: M" (0.7-0.10
# executor/executor_base.py, the platform's device name: "# cpu blocks: N, # CPU blocks: 0" on the CPU backend),
# "# CPU blocks: N" alone (0.4-0.6 executor/cpu_executor.py: the CPU backend's own pool), "# GPU blocks: N" (V1 0.7),
# "OpenVINO cpu: # device blocks: N; # swap blocks: M" (0.6 executor/openvino_executor.py).
_BLOCKS = re.compile(r"# ([A-Za-z]{2,8}) blocks: (\d+)(?:(?:, # CPU|; # swap) blocks: (\d+))?")
_KV_TOKENS = re.compile(r"(?:\b([A-Za-z]{2,8}) )?KV cache size: ([\d,]{1,20}) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]{1,20}) tokens per request: " + _NUM + "x")
_KV_MEMORY = re.compile(r"(?:Available KV cache memory:|reserved for KV Cache is) " + _NUM + " ?GiB")
# The CPU backend's pool (0.32.0 v1/worker/cpu_worker.py:260 "Explicitly set (%s/%s) GiB for KV cache on node %d").
_CPU_KV_MEMORY = re.compile(r"Explicitly set \(" + _NUM + r"/[\d.]{1,20}\) GiB for KV cache")
# --num-gpu-blocks-override (0.32.0 v1/core/kv_cache_utils.py:2619; V0 worker/worker.py): the pool is the override.
_OVERRIDE = re.compile(r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=(\d+)")
_V0_TOO_LONG = re.compile(
    r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in "
    r"KV cache \((\d+)\)"
)
_V1_TOO_LONG = re.compile(
    r"max seq len \((\d+)\), \(" + _NUM + r" GiB KV cache is needed, which is larger than the "
    r"available KV cache memory \(" + _NUM + " GiB"
)
_ESTIMATED_LEN = re.compile(r"estimated maximum model length is (\d+)")
# v1/metrics/loggers.py log_engine_initialized: no prefix (0.9.0), "Engine %03d: " (0.9.1+; info until
# 0.11.0, DEBUG after: release_guess.py), "%d Engines: " (AggregatedLoggingStatLogger, 0.11.1+).
_CONFIG_BLOCKS = re.compile(
    r"(?:Engine (\d{1,4}): |\d{1,4} Engines: )?vllm cache_config_info with initialization after "
    r"num_gpu_blocks is: (\d+)"
)
# Fields of the V1 stats line that only newer releases print (release_guess.FEATURES says which).
_NEWER_STAT_FIELDS = {
    "External prefix cache hit rate:": "v1_stats_external_prefix_hit",
    "MM cache hit rate:": "v1_stats_mm_cache_hit",
    "Corrupted:": "v1_stats_corrupted",
    "Deferred:": "v1_stats_deferred",
    "KV fetch:": "v1_stats_kv_fetch",
}
_MFU = re.compile(r"MFU: " + _NUM + " TF/s/device")
# The engine's config line, the API server's version line, or (0.32.0 entrypoints/serve/utils/api_utils.py:327-345)
# its "vLLM server version %s, serving model %s" or start-up logo "▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0".
_VERSION = re.compile(r"(?:LLM engine \(v|vLLM (?:API )?server version v?|█  version v?)(\d+\.\d+\.\d+[\w.+-]{0,30})")
_ENGINE_KIND = re.compile(r"Initializing an? (V[01] )?LLM engine")
# key=value (engine config dump, Namespace(...)) and 'key': value (non-default args dict).
_CONFIG_ITEM = re.compile(
    r"['\"]?\b(gpu_memory_utilization|max_num_seqs|max_model_len|swap_space|block_size"
    r"|enable_prefix_caching|enable_chunked_prefill|kv_offloading_size|tensor_parallel_size)"
    r"['\"]?(?:=|: )([\w.]{1,30})"
)
# --model in a config dump (model='org/name', 'model': 'org/name'): not served_model_name, not model_name
_MODEL = re.compile(r"""['"]?\bmodel['"]?(?:=|: )['"]([^'"\s]{1,200})['"]""")

# Cheap substring pre-filter: a message without any of these cannot be a record (keeps the hot path regex-free).
KEYWORDS = (
    "throughput",
    "preempted",
    "blocks:",
    "KV cache",
    "concurrency",
    "max seq len",
    "engine",
    "args",
    "Prefix cache",
    "server version",
    "█  version",
    "num_gpu_blocks",  # "... num_gpu_blocks is: N", "Overriding num_gpu_blocks=..."
    "MFU:",
)


@dataclass(slots=True)
class StatsRecord:
    fields: dict  # running, waiting, swapped, gpu_kv_usage, cpu_kv_usage, prompt_tps, gen_tps, prefix_hit_rate, ...
    engine: int | None
    aggregated_engines: int | None
    complete: bool  # False: looks cut off (a wrapped line); the reader may join the next line
    device: str | None  # "GPU", "CPU"... as printed before "KV cache usage"; "" when no device name
    refused: int = 0  # numbers out of range (base/numbers.py), not read
    newer_fields: tuple[str, ...] = ()  # release_guess features of fields only newer releases print


@dataclass(slots=True)
class V0PrefixHitRecord:
    gpu: float
    cpu: float


@dataclass(slots=True)
class PreemptionRecord:
    request_id: str
    mode: str
    cumulative: int | None  # None: the line was cut before the count
    refused: int = 0  # a count out of range (base/numbers.py), not read


@dataclass(slots=True)
class StartupRecord:
    facts: dict  # StartupFact field -> value
    error: bool = False
    form: str = ""  # which line it was: "blocks", "kv_tokens", "concurrency", "kv_tokens+concurrency"...
    refused: int = 0  # numbers out of range (base/numbers.py), not read
    engine: int | None = None  # "Engine 001: vllm cache_config_info ..." (the data-parallel engine it is about)
    device: str | None = None  # "GPU", "cuda", "CPU", "XPU": the device whose pool the line counts


@dataclass(slots=True)
class FeatureRecord:
    """A line that tells only which releases print it (the MFU line)."""

    feature: str


@dataclass(slots=True)
class ConfigRecord:
    items: dict  # ServerConfig field -> raw string
    version: str | None
    engine_kind: str | None  # "v0", "v1" when the line says
    startup_marker: bool = False  # the line a server prints once per start (its version, its engine's config)
    features: tuple[str, ...] = ()  # release_guess features the line shows


_STAT_NAMES = {
    "Avg prompt throughput": "prompt_tps",
    "Avg generation throughput": "gen_tps",
    "Running": "running",
    "Swapped": "swapped",
    "Pending": "waiting",
    "Waiting": "waiting",
    "Preemptions": "preemptions",
    "Prefix cache hit rate": "prefix_hit_rate",
}
_INT_FIELDS = {"running", "swapped", "waiting", "preemptions"}


def parse_stats(message: str) -> StatsRecord:
    fields: dict = {}
    device = None
    refused = 0
    for match in _STAT_FIELD.finditer(message):
        name, dev, value, percent = match.group(1), match.group(2), match.group(3), match.group(4)
        if name.endswith("KV cache usage"):
            # V0's "CPU KV cache usage" is its swap pool, after the device's; alone (V1 on the CPU backend, 0.30+
            # loggers.py "%s KV cache usage" with the platform's name) it is the device's own pool.
            key = "cpu_kv_usage" if dev == "CPU" and device is not None else "gpu_kv_usage"
            if key == "gpu_kv_usage":
                device = dev or ""
        else:
            key = _STAT_NAMES[name]
        number: float | None
        if key in _INT_FIELDS:
            number = bounded_int(value)
        elif key in ("gpu_kv_usage", "cpu_kv_usage", "prefix_hit_rate"):
            if not percent:
                continue  # "12.5" without its % sign: the line was cut inside the number
            percentage = bounded_float(value, 100.0)
            number = round(percentage / 100.0, 6) if percentage is not None else None
        else:
            number = bounded_float(value, MAX_RATE)
        if number is None:
            refused += 1
            continue
        fields[key] = number
    engine = _ENGINE.search(message)
    aggregated = _AGGREGATED.search(message)
    # V0 ends with CPU KV usage; V1 ends with KV usage or the prefix hit rate (a later field means nothing was cut).
    complete = "cpu_kv_usage" in fields or ("gpu_kv_usage" in fields and "Swapped" not in message)
    newer = tuple(feature for text, feature in _NEWER_STAT_FIELDS.items() if text in message)
    return StatsRecord(
        fields,
        int(engine.group(1)) if engine else None,
        int(aggregated.group(1)) if aggregated else None,
        complete,
        device,
        refused,
        newer,
    )


def parse_message(message: str) -> object | None:
    """The record in one message, or None when it is none of ours."""
    if not any(word in message for word in KEYWORDS):
        return None
    # "Throughput: %.1f tokens/s, Running: ..." is 0.1.2's line (core/scheduler.py): its one figure is not read.
    if ("throughput" in message or "Throughput:" in message) and ("Running" in message or "Avg prompt" in message):
        return parse_stats(message)
    if "preempted by" in message:
        match = _PREEMPTED.search(message)
        if match:
            cumulative = _CUMULATIVE.search(message)
            count = bounded_int(cumulative.group(1)) if cumulative else None
            return PreemptionRecord(
                match.group(1), match.group(2), count, int(cumulative is not None and count is None)
            )
    match = _V0_PREFIX_HIT.search(message)
    if match:
        gpu, cpu = bounded_float(match.group(1), 100.0), bounded_float(match.group(2), 100.0)
        if gpu is not None and cpu is not None:
            return V0PrefixHitRecord(round(gpu / 100.0, 6), round(cpu / 100.0, 6))
    startup = parse_startup(message)
    if startup is not None:
        return startup
    if "MFU:" in message and _MFU.search(message):
        return FeatureRecord("v1_mfu_line")
    return parse_config(message)


def parse_startup(message: str) -> StartupRecord | None:
    facts: dict = {}
    forms = []
    refused = 0

    def put(key: str, text: str, high: float = MAX_COUNT, whole: bool = True) -> None:
        nonlocal refused
        value = bounded_int(text.replace(",", ""), int(high)) if whole else bounded_float(text, high)
        if value is None:
            refused += 1
        else:
            facts[key] = value

    device = engine = None
    match = _BLOCKS.search(message)
    if match:  # the first "# X blocks" is the device's pool, whatever the device (CPU on the CPU backend)
        device = match.group(1)
        put("num_gpu_blocks", match.group(2))
        if match.group(3) is not None:
            put("num_cpu_blocks", match.group(3))
        forms.append("blocks")
    match = _OVERRIDE.search(message)
    if match:
        put("num_gpu_blocks", match.group(2))
        forms.append("override_blocks")
    match = _CPU_KV_MEMORY.search(message)
    if match:
        put("kv_memory_gib", match.group(1), MAX_GIB, whole=False)
        device = "CPU"
        forms.append("kv_memory")
    match = _CONFIG_BLOCKS.search(message)
    if match:
        put("num_gpu_blocks", match.group(2))
        engine = int(match.group(1)) if match.group(1) else None
        forms.append("config_blocks")
    match = _KV_TOKENS.search(message)
    if match:
        put("kv_cache_tokens", match.group(2))
        device = match.group(1) if match.group(1) not in (None, "Available") else device
        forms.append("kv_tokens")
    match = _CONCURRENCY.search(message)
    if match:
        put("max_model_len", match.group(1))
        put("max_concurrency", match.group(2), MAX_COUNT, whole=False)
        forms.append("concurrency")
    match = _KV_MEMORY.search(message)
    if match:
        put("kv_memory_gib", match.group(1), MAX_GIB, whole=False)
        forms.append("kv_memory")
    error = False
    match = _V0_TOO_LONG.search(message)
    if match:
        put("max_model_len", match.group(1))
        put("kv_cache_tokens", match.group(2))
        facts["max_concurrency"] = None
        error = True
    match = _V1_TOO_LONG.search(message)
    if match:
        put("max_model_len", match.group(1))
        put("kv_memory_gib", match.group(3), MAX_GIB, whole=False)
        estimated = _ESTIMATED_LEN.search(message)
        if estimated:
            put("kv_cache_tokens", estimated.group(1))  # the longest request that fits: all the KV there is
        error = True
    if not facts and not error and not refused:
        return None
    return StartupRecord(facts, error, "+".join(forms) or "error", refused, engine, device)


def parse_config(message: str) -> ConfigRecord | None:
    version = _VERSION.search(message)
    kind = _ENGINE_KIND.search(message)
    items = {}
    if "args" in message or "config" in message:
        items = {match.group(1): match.group(2) for match in _CONFIG_ITEM.finditer(message)}
        model = _MODEL.search(message)
        if model is not None:
            items["model"] = model.group(1)
    if not items and version is None and kind is None:
        return None
    engine_kind = None
    if kind is not None:
        engine_kind = "v1" if kind.group(1) == "V1 " else "v0"
    elif "V1 LLM engine" in message or "EngineCore" in message:
        engine_kind = "v1"
    features: tuple[str, ...] = ()
    # 0.1.x engine/llm_engine.py: its config line has no max_seq_len (0.2.0 adds it, with revision= and
    # quantization=); only a whole line ("seed=N)" ends it) can tell.
    if kind is not None and version is None and "LLM engine with config:" in message:
        if "max_seq_len=" in message:
            features = ("engine_config_unversioned",)
        elif "seed=" in message:
            features = ("engine_config_no_max_seq_len",)
    return ConfigRecord(
        items, version.group(1) if version else None, engine_kind, version is not None or kind is not None, features
    )
