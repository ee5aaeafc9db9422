"""Border types: what the readers extract (start-up facts, timeline samples, preemption warnings, configuration)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

STARTUP_JSON_KEYS = (
    "num_gpu_blocks",
    "num_cpu_blocks",
    "block_size",
    "kv_cache_tokens",
    "max_concurrency",
    "max_model_len",
)
SAMPLE_JSON_KEYS = (
    "time",
    "running",
    "waiting",
    "swapped",
    "gpu_kv_usage",
    "cpu_kv_usage",
    "prompt_tps",
    "gen_tps",
    "prefix_hit_rate",
    "preemptions",
)


@dataclass(slots=True)
class StartupFact:
    """Capacity facts of one start-up (or one worker under tensor parallelism)."""

    num_gpu_blocks: int | None = None
    num_cpu_blocks: int | None = None
    block_size: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_model_len: int | None = None
    kv_memory_gib: float | None = None  # "Available KV cache memory" / "reserved for KV Cache is"
    startup_error: bool = False  # the max-seq-len-larger-than-KV error: the server never came up
    lines: list[int] = field(default_factory=list)
    engine: int | None = None  # the data-parallel engine it belongs to ("(EngineCore_DP1 pid=7)", "Engine 001: ")
    device: str | None = None  # the pool's device as printed ("GPU", "cuda", "CPU"): None when not printed

    def to_json_dict(self) -> dict:
        engine = {"engine": self.engine} if self.engine is not None else {}  # data parallel: whose start-up
        return {key: getattr(self, key) for key in STARTUP_JSON_KEYS} | engine


@dataclass(slots=True)
class Sample:
    """One point of the timeline: a periodic stats line, or one metrics scrape. Fractions are 0-1."""

    time: str | None = None
    seconds: float | None = None  # the time as seconds on one axis (for rates); not in the JSON
    running: int | None = None
    waiting: int | None = None
    swapped: int | None = None
    gpu_kv_usage: float | None = None
    cpu_kv_usage: float | None = None
    prompt_tps: float | None = None
    gen_tps: float | None = None
    prefix_hit_rate: float | None = None
    preemptions: int | None = None  # in the interval ending at this sample
    line: int | None = None  # where it came from (log line, or scrape number for metrics)
    engine: int | None = None  # V1 "Engine 000:" index

    def to_json_dict(self) -> dict:
        return {key: getattr(self, key) for key in SAMPLE_JSON_KEYS}


@dataclass(slots=True)
class PreemptionWarning:
    """V0's warning, printed on the 1st, 51st, 101st... preemption: the count is `cumulative`, not the line count."""

    line: int
    request_id: str
    mode: str  # "RECOMPUTE" or "SWAP"
    cumulative: int
    time: str | None = None


@dataclass
class ServerConfig:
    """Settings the log's config dump revealed (None: not seen)."""

    version: str | None = None  # exact release when the log printed it
    model: str | None = None  # --model as the log names it (a Hugging Face id or a path)
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_model_len: int | None = None
    swap_space_gib: float | None = None
    block_size: int | None = None
    enable_prefix_caching: bool | None = None
    enable_chunked_prefill: bool | None = None
    kv_offloading_size_gib: float | None = None
    tensor_parallel_size: int | None = None

    def to_json_dict(self) -> dict:
        return asdict(self)
