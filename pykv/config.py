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
    swap_space: float = 0.0
    num_cpu_blocks: Optional[int] = None
    max_num_seqs: int = 8
    max_num_batched_tokens: int = 256
    max_model_len: Optional[int] = None
    preemption_mode: str = "recompute"
    enable_prefix_caching: bool = False
    enable_chunked_prefill: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("block_size", "num_gpu_blocks", "max_num_seqs", "max_num_batched_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}; set it to 1 or more.")
        if self.block_size > 256:
            raise ValueError(f"block_size={self.block_size} is too large; use at most 256 tokens per block (vLLM uses 16).")
        if self.swap_space < 0:
            raise ValueError(f"swap_space is in GiB and cannot be negative (got {self.swap_space}); use 0 for no swap pool.")
        if self.num_cpu_blocks is not None and (not isinstance(self.num_cpu_blocks, int) or self.num_cpu_blocks < 0):
            raise ValueError(f"num_cpu_blocks must be a non-negative integer or None, got {self.num_cpu_blocks!r}.")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"max_model_len must be positive or None, got {self.max_model_len}.")
        if self.preemption_mode not in PREEMPTION_MODES:
            raise ValueError(f"preemption_mode must be one of {PREEMPTION_MODES}, got {self.preemption_mode!r}.")
        if self.preemption_mode != "recompute":
            raise ValueError(
                f"preemption_mode={self.preemption_mode!r} is not available yet: this engine preempts by "
                "recompute only (vLLM V1's only mode). Use preemption_mode='recompute'."
            )
        if self.attention_backend not in ATTENTION_BACKENDS:
            raise ValueError(f"attention_backend must be one of {ATTENTION_BACKENDS}, got {self.attention_backend!r}.")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}.")
        if not (self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"device must be 'cpu' or 'cuda' (optionally 'cuda:N'), got {self.device!r}.")

    def replace(self, **changes) -> "EngineConfig":
        """A copy with some fields changed (validated like a new config)."""
        return dataclasses.replace(self, **changes)
