"""Estimate: the modelled GPU time of a schedule's steps on a named GPU and model shape.

A step runs chunks: each chunk is ``n`` new tokens of one sequence after ``s`` tokens already in its
KV cache (a decode is n = 1). For a step of M tokens over S sequences, on each of ``tp`` GPUs::

    linear    flops = 2 x layer_params x M + 2 x lm_head_params x S       (one GEMM pass over the batch)
              bytes = (layer_params + lm_head_params) x weight_bytes      (the weights, read once)
    attention per chunk: flops = 4 x layers x heads x head_dim x (n s + n (n + 1) / 2)   (QK^T and PV, causal)
              bytes = layers x 2 x kv_heads x head_dim x kv_bytes x (s + n)             (its K/V read once)
    phase time = max(compute, memory) (the roofline): compute = flops / (peak x efficiency), memory =
              bytes / (bandwidth x efficiency); a GEMM of M rows reaches efficiency x M / (M + M0)
    step      = linear + sum(attention) + step overhead + layers x layer overhead
              + 2 x layers x (all-reduce latency + 2 (tp - 1) / tp x M x hidden x 2 bytes / link)  when tp > 1
    copy      = bytes / link bandwidth (per direction, pinned or pageable) + copies x per-copy overhead

Weights and heads are split over ``tp`` GPUs; so are the KV heads (one per GPU at least), so a copy
moves each GPU's share over its own host link, in parallel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from pykv.border.pcie import LINKS, link_copy_seconds
from pykv.border.step_report import PreemptionView, StepReport
from pykv.gpu_model.calibration import CALIBRATION, Calibration
from pykv.gpu_model.gpus import GpuSpec, find_gpu
from pykv.gpu_model.models import MODELS, find_model
from pykv.gpu_model.shapes import ModelShape

DTYPES = {"bf16": (2, "16bit"), "fp16": (2, "16bit"), "fp8": (1, "fp8"), "fp32": (4, "fp32")}  # bytes, peak key
ACTIVATION_BYTES = 2  # all-reduced activations are 16-bit
TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}  # EngineConfig.dtype -> ours


@dataclass(frozen=True)
class Chunk:
    context: int  # tokens already in the sequence's KV cache
    tokens: int  # new tokens computed this step


@dataclass(frozen=True)
class StepCost:
    """One modelled step, in ms, by phase (``total`` is what the step takes)."""

    linear: float
    attention: float
    overhead: float
    allreduce: float
    copies: float = 0.0

    @property
    def total(self) -> float:
        return self.linear + self.attention + self.overhead + self.allreduce + self.copies


class Estimate:
    """A GPU + model shape + dtype + tensor-parallel size. Every figure is modelled (not measured) and
    depends on nothing but these arguments and the calibration table."""

    def __init__(
        self,
        gpu: GpuSpec,
        shape: ModelShape,
        dtype: str = "bf16",
        tp: int = 1,
        kv_dtype: str | None = None,
        calibration: Calibration = CALIBRATION,
    ) -> None:
        for what, value in (("dtype", dtype), ("kv_dtype", kv_dtype or dtype)):
            if value not in DTYPES:
                raise ValueError(f"Unknown {what} {value!r}; choose one of: {', '.join(DTYPES)}.")
        if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1 or tp > 64:
            raise ValueError(f"tp (tensor-parallel GPUs) must be a whole number from 1 to 64, got {tp!r}.")
        if shape.heads % tp:
            raise ValueError(
                f"{shape.name} has {shape.heads} attention heads, which {tp} GPUs cannot split evenly; "
                "choose a tp that divides it."
            )
        peak = DTYPES[dtype][1]
        if peak not in gpu.tflops:
            have = sorted({d for d, (_, k) in DTYPES.items() if k in gpu.tflops})
            raise ValueError(f"{gpu.name} has no {dtype} tensor cores; choose one of: {', '.join(have)}.")
        self.gpu, self.shape, self.dtype, self.tp = gpu, shape, dtype, tp
        self.kv_dtype = kv_dtype or dtype
        self.calibration = calibration
        self.weight_bytes = DTYPES[dtype][0]
        self.kv_elem_bytes = DTYPES[self.kv_dtype][0]
        self.link = LINKS[gpu.host_link]

    # ---- what the target is ------------------------------------------------------------------

    @property
    def label(self) -> str:
        """``H100-SXM + Llama-3.1-8B`` (with dtype and TP when they are not bf16 / 1)."""
        extra = [d for d in (self.dtype if self.dtype != "bf16" else "", f"TP{self.tp}" if self.tp > 1 else "") if d]
        return f"{self.gpu.name} + {self.shape.name}" + (f" ({', '.join(extra)})" if extra else "")

    @property
    def kv_bytes_per_token(self) -> int:
        """KV bytes one token holds, over all ``tp`` GPUs."""
        return self.shape.kv_bytes_per_token(self.kv_elem_bytes)

    @property
    def kv_heads_per_gpu(self) -> int:
        return max(1, math.ceil(self.shape.kv_heads / self.tp))  # fewer KV heads than GPUs: replicated

    @property
    def kv_bytes_per_token_per_gpu(self) -> int:
        return self.shape.layers * 2 * self.kv_heads_per_gpu * self.shape.head_dim * self.kv_elem_bytes

    @property
    def weight_bytes_per_gpu(self) -> float:
        return self.shape.total_params * self.weight_bytes / self.tp

    # ---- the model ---------------------------------------------------------------------------

    def _peak(self, key: str) -> float:
        return self.gpu.tflops[key] * 1e12

    def _compute_s(self, flops: float, efficiency: float, peak_key: str) -> float:
        return flops / (self._peak(peak_key) * efficiency)

    def _memory_s(self, num_bytes: float) -> float:
        return num_bytes / (self.gpu.memory_gbps * 1e9 * self.calibration.memory_efficiency)

    def linear_terms_ms(self, tokens: int, sequences: int) -> tuple[float, float]:
        """(compute, memory) ms of the weight GEMMs for ``tokens`` tokens of ``sequences`` sequences."""
        s, c = self.shape, self.calibration
        peak = DTYPES[self.dtype][1]
        eff = c.gemm_efficiency_fp8 if peak == "fp8" else c.gemm_efficiency_16bit
        eff *= tokens / (tokens + c.gemm_half_tokens) if tokens else 1.0  # few rows: SMs left idle
        flops = (2 * s.layer_params * tokens + 2 * s.lm_head_params * sequences) / self.tp
        weights = (s.layer_params + s.lm_head_params) * self.weight_bytes / self.tp
        return self._compute_s(flops, eff, peak) * 1e3, self._memory_s(weights) * 1e3

    @property
    def linear_switch_tokens(self) -> float:
        """Tokens per step where the weight GEMMs stop being memory-bound (the two terms are equal):
        compute(M) = 2 P (M + M0) / (peak x efficiency) = memory  =>  M = memory / per-token - M0."""
        big = 1e9  # at this many tokens the efficiency is its large-GEMM value
        compute_big, memory = self.linear_terms_ms(int(big), 0)
        per_token = compute_big / (big + self.calibration.gemm_half_tokens)
        return memory / per_token - self.calibration.gemm_half_tokens

    def attention_terms_ms(self, chunk: Chunk) -> tuple[float, float]:
        s = self.shape
        pairs = chunk.tokens * chunk.context + chunk.tokens * (chunk.tokens + 1) / 2
        flops = 4 * s.layers * (s.heads // self.tp) * s.head_dim * pairs
        kv = self.kv_bytes_per_token_per_gpu * (chunk.context + chunk.tokens)
        peak = "fp32" if self.dtype == "fp32" else "16bit"  # attention runs in 16-bit even with fp8 weights
        return self._compute_s(flops, self.calibration.attention_efficiency, peak) * 1e3, self._memory_s(kv) * 1e3

    def allreduce_ms(self, tokens: int) -> float:
        if self.tp == 1:
            return 0.0
        c = self.calibration
        wire = 2 * (self.tp - 1) / self.tp * tokens * self.shape.hidden * ACTIVATION_BYTES
        each = c.allreduce_latency_us * 1e-6 + wire / (self.gpu.interconnect_gbps * 1e9 * c.interconnect_efficiency)
        return 2 * self.shape.layers * each * 1e3

    def forward_cost(self, chunks: Sequence[Chunk]) -> StepCost:
        """The modelled cost of one forward pass over ``chunks`` (an empty step costs nothing)."""
        chunks = [c for c in chunks if c.tokens > 0]
        if not chunks:
            return StepCost(0.0, 0.0, 0.0, 0.0)
        c = self.calibration
        tokens = sum(ch.tokens for ch in chunks)
        linear = max(self.linear_terms_ms(tokens, len(chunks)))
        attention = sum(max(self.attention_terms_ms(ch)) for ch in chunks)
        overhead = (c.step_overhead_us + self.shape.layers * c.layer_overhead_us) * 1e-3
        return StepCost(linear, attention, overhead, self.allreduce_ms(tokens))

    # ---- the public figures --------------------------------------------------------------------

    def prefill_ms(self, tokens: int, batch: int = 1, context: int = 0) -> float:
        """One step prefilling ``tokens`` new tokens for each of ``batch`` sequences that already hold
        ``context`` tokens of KV (a re-prefill after a preemption has context 0)."""
        _check_count("tokens", tokens, 1)
        _check_count("batch", batch, 1)
        _check_count("context", context, 0)
        return self.forward_cost([Chunk(context, tokens)] * batch).total

    def decode_step_ms(self, batch: int, context: int) -> float:
        """One decode step: ``batch`` sequences, each ``context`` tokens long, produce one token each."""
        _check_count("batch", batch, 1)
        _check_count("context", context, 0)
        return self.forward_cost([Chunk(context, 1)] * batch).total

    def copy_ms(self, num_bytes: int, direction: str = "h2d", pinned: bool = True, copies: int = 1) -> float:
        """Host<->device copy of ``num_bytes`` in ``copies`` copies over this GPU's host link."""
        _check_count("num_bytes", num_bytes, 0)
        _check_count("copies", copies, 1)
        return link_copy_seconds(self.link, num_bytes, direction, pinned, copies) * 1e3

    def kv_copy_ms(self, tokens: int, direction: str, blocks: int = 1, per_block: bool = False) -> float:
        """Moving ``tokens`` tokens of this model's KV (each GPU its share, in parallel); per-block copies
        issue one copy per block, layer and K/V, as vLLM V0's ``swap_blocks`` did."""
        copies = blocks * self.shape.layers * 2 if per_block else 1
        return self.copy_ms(tokens * self.kv_bytes_per_token_per_gpu, direction, True, copies)

    def swap_bytes(self, view: PreemptionView, block_size: int | None) -> int:
        """The bytes a swap of the engine (a PreemptionView) moves each way in this model's KV: whole blocks x
        bytes per block, as V0's ``swap_blocks`` copies a block whole however few of its slots hold tokens (a
        33-token victim in blocks of 16 moves 48 tokens' worth). ValueError without the block size: pricing its
        tokens instead would understate up to a block per sequence."""
        if block_size is None:
            raise ValueError("A swap is priced in whole blocks: give the block size of the run it comes from.")
        blocks = view.num_blocks if view.blocks_copied is None else view.blocks_copied
        return blocks * block_size * self.kv_bytes_per_token_per_gpu

    def swap_ms(self, view: PreemptionView, direction: str, block_size: int | None) -> float:
        """A swap of the engine in this model's bytes (:meth:`swap_bytes`), over this GPU's host link; batched
        unless the engine copied block by block."""
        blocks = view.num_blocks if view.blocks_copied is None else view.blocks_copied
        if blocks == 0:
            return 0.0  # a sequence whose blocks a sibling's copy already moved
        copies = blocks * self.shape.layers * 2 if (view.swap_copies or 1) > 1 else 1
        return self.copy_ms(self.swap_bytes(view, block_size), direction, True, copies)

    def step_cost(self, report: StepReport, block_size: int | None = None) -> StepCost:
        """The modelled cost of a real pykv step: its chunks, and the swap copies it waited for."""
        cost = self.forward_cost([Chunk(ch.start, ch.num_new_tokens) for ch in report.chunks])
        copies = sum(self.swap_ms(p, "d2h", block_size) for p in report.preempted if p.mode == "swap")
        copies += sum(self.swap_ms(p, "h2d", block_size) for p in report.swapped_in)
        # V1's offloading tier: a step waits for its loads; stores run behind the next forward (not charged)
        copies += sum(
            self.kv_copy_ms(t.num_blocks * (block_size or 16), "h2d") for t in report.offload if t.direction == "load"
        )
        return StepCost(cost.linear, cost.attention, cost.overhead, cost.allreduce, copies)

    def step_ms(self, report: StepReport, block_size: int | None = None) -> float:
        return self.step_cost(report, block_size).total


def _check_count(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be a whole number of at least {low}, got {value!r}.")


def estimate(
    gpu="H100-SXM",
    model="llama-3.1-8b",
    dtype: str = "bf16",
    tp: int = 1,
    kv_dtype: str | None = None,
    calibration: Calibration = CALIBRATION,
) -> Estimate:
    """The modelled cost of steps on ``gpu`` (a name of ``GPUS``) running ``model`` (a name of
    ``MODELS``, or a ModelShape) in ``dtype`` with ``tp``-way tensor parallelism."""
    return Estimate(find_gpu(gpu), find_model(model), dtype, tp, kv_dtype, calibration)


@dataclass(frozen=True)
class Target:
    """A named target (what the app's picker and a lesson choose): names, not objects, so it is hashable."""

    gpu: str = "H100-SXM"
    model: str = "llama-3.1-8b"
    dtype: str = "bf16"
    tp: int = 1

    def estimate(self) -> Estimate:
        return estimate(self.gpu, self.model, self.dtype, self.tp)


DEFAULT_TARGET = Target()  # the app's default and the course's: an H100 running Llama-3.1-8B in bf16

__all__ = ["Chunk", "DEFAULT_TARGET", "Estimate", "MODELS", "StepCost", "Target", "estimate"]
