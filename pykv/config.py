"""EngineConfig: the engine's knobs, named as vLLM names its flags, validated with messages that
say what to change."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, Optional

PreemptionMode = Literal["recompute", "swap", "auto"]
PREEMPTION_MODES = ("recompute", "swap", "auto")
ATTENTION_BACKENDS = ("auto", "torch", "triton")
DTYPES = ("float32", "float16", "bfloat16")
SWAP_FALLBACKS = ("recompute", "abort")
SWAP_COPIES = ("batched", "per_block")


@dataclass(frozen=True)
class EngineConfig:
    """Everything that shapes an engine. Frozen: rebuild the engine to change it.

    ``model`` is ``"tiny"`` (the shipped default) or a path to a local Hugging Face
    Llama/Qwen2-family checkpoint folder.
    """

    model: str = "tiny"
    device: str = "cpu"
    attention_backend: str = "auto"
    dtype: str = "float32"
    block_size: int = 16
    num_gpu_blocks: int = 64
    gpu_memory_utilization: Optional[float] = None  # CUDA only: size the pool from free GPU memory instead
    swap_space: float = 0.0
    num_cpu_blocks: Optional[int] = None
    max_num_seqs: int = 8
    max_num_batched_tokens: int = 256
    max_model_len: Optional[int] = None
    preemption_mode: str = "recompute"
    enable_prefix_caching: bool = False
    enable_chunked_prefill: bool = True
    seed: int = 0
    # Swap (vLLM V0): what to do when the CPU pool is full, how to copy, free room kept on swap-in.
    swap_fallback: str = "recompute"
    swap_copy: str = "batched"
    swap_watermark: float = 0.01
    # Modelled PCIe cost of a swap, shown beside the measured one (PCIe Gen5 x16, pinned memory).
    pcie_bandwidth_gbps: float = 50.0
    pcie_copy_overhead_us: float = 10.0
    # Observability and safety.
    max_preemptions_without_progress: int = 50
    log_stats_interval: int = 10  # steps between vLLM-style stats log lines
    history_size: int = 64  # snapshots kept for stepping back

    def __post_init__(self) -> None:
        for name in ("block_size", "num_gpu_blocks", "max_num_seqs", "max_num_batched_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}; set it to 1 or more.")
        if self.block_size > 256:
            raise ValueError(f"block_size={self.block_size} is too large; use at most 256 tokens per block (vLLM uses 16).")
        if self.gpu_memory_utilization is not None:
            if not 0 < self.gpu_memory_utilization <= 1:
                raise ValueError(f"gpu_memory_utilization is a fraction in (0, 1], got {self.gpu_memory_utilization}.")
            if not self.device.startswith("cuda"):
                raise ValueError("gpu_memory_utilization applies to CUDA devices only; on CPU set num_gpu_blocks instead.")
        if self.swap_space < 0:
            raise ValueError(f"swap_space is in GiB and cannot be negative (got {self.swap_space}); use 0 for no swap pool.")
        if self.num_cpu_blocks is not None and (not isinstance(self.num_cpu_blocks, int) or self.num_cpu_blocks < 0):
            raise ValueError(f"num_cpu_blocks must be a non-negative integer or None, got {self.num_cpu_blocks!r}.")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"max_model_len must be positive or None, got {self.max_model_len}.")
        if self.preemption_mode not in PREEMPTION_MODES:
            raise ValueError(f"preemption_mode must be one of {PREEMPTION_MODES}, got {self.preemption_mode!r}.")
        if self.swap_fallback not in SWAP_FALLBACKS:
            raise ValueError(f"swap_fallback must be one of {SWAP_FALLBACKS}, got {self.swap_fallback!r}.")
        if self.swap_copy not in SWAP_COPIES:
            raise ValueError(f"swap_copy must be one of {SWAP_COPIES}, got {self.swap_copy!r}.")
        if self.preemption_mode == "swap" and self.swap_space == 0 and self.num_cpu_blocks is None:
            raise ValueError(
                "preemption_mode='swap' needs a CPU swap pool: set swap_space (GiB, as vLLM's --swap-space) or "
                "num_cpu_blocks. (num_cpu_blocks=0 is allowed on purpose: every swap then falls back.)"
            )
        if not 0 <= self.swap_watermark < 1:
            raise ValueError(f"swap_watermark is a fraction of the device pool in [0, 1), got {self.swap_watermark}.")
        if self.pcie_bandwidth_gbps <= 0 or self.pcie_copy_overhead_us < 0:
            raise ValueError("pcie_bandwidth_gbps must be positive and pcie_copy_overhead_us non-negative.")
        for name in ("max_preemptions_without_progress", "log_stats_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if self.history_size < 0:
            raise ValueError(f"history_size must be >= 0 (0 keeps no history), got {self.history_size}.")
        if self.attention_backend not in ATTENTION_BACKENDS:
            raise ValueError(f"attention_backend must be one of {ATTENTION_BACKENDS}, got {self.attention_backend!r}.")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}.")
        if not (self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"device must be 'cpu' or 'cuda' (optionally 'cuda:N'), got {self.device!r}.")

    def replace(self, **changes) -> "EngineConfig":
        """A copy with some fields changed (validated like a new config)."""
        return dataclasses.replace(self, **changes)
