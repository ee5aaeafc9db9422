"""KV sizing arithmetic for lessons: the ``kv`` root of a value path.

    kv . model . bytes_per_token                   the lesson engine's own model (its config.json, its dtype)
    kv . llama-3.1-8b . at_utilization . 90 . num_gpu_blocks
                                                   a model of pykv.gpu_model's catalogue, in bf16, on the
                                                   course's GPU target (modelled, not measured)

The arithmetic, for a model with L layers, H KV heads of D dims, b bytes per element::

    bytes per token   = 2 (K and V) x L x H x D x b
    bytes per block   = block_size x bytes per token          (block_size: the lesson engine's)
    pool tokens       = pool bytes / bytes per token          (= num_gpu_blocks x block_size)

    on a GPU of M bytes, vLLM's sizing with gpu_memory_utilization u:
    KV bytes          = u x M - weights                        (vLLM also subtracts the peak activation memory
                                                                of a profiled forward pass: left out here)
    num_gpu_blocks    = KV bytes // bytes per block
    headroom          = (1 - u) x M                            (what other processes may use)

Pure arithmetic over config files: reading ``kv.model`` opens the engine model's ``config.json``, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pykv.border.config import EngineConfig
from pykv.border.snapshot import Snapshot
from pykv.gpu_model import DEFAULT_TARGET, ModelShape
from pykv.gpu_model.models import MODELS, find_model

UTILIZATIONS = (80, 90, 92, 95)  # gpu_memory_utilization in percent: the keys of ``at_utilization`` (vLLM's default:
# 0.9 up to 0.12, 0.92 by 0.20.0 and in 0.33.0: config/cache.py CacheConfig.gpu_memory_utilization)
UTILIZATION_KEYS = tuple(str(p) for p in UTILIZATIONS)
ENGINE_MODEL = "model"  # kv.model: the model the lesson's engine runs
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}  # EngineConfig.dtype -> bytes per element
CATALOGUE_DTYPE_BYTES = 2  # catalogue models are sized in bf16, as the course's GPU target runs them


@dataclass(frozen=True)
class KvSizing:
    """One model's KV arithmetic (bytes)."""

    name: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int  # bytes per K or V element
    bytes_per_token: int  # 2 x layers x kv_heads x head_dim x dtype_bytes
    block_size: int  # the lesson engine's block size
    bytes_per_block: int  # block_size x bytes_per_token
    weight_bytes: int  # parameters x dtype_bytes (norms and biases left out: well under 1%)
    max_context: int  # the model's context length (max_position_embeddings)
    bytes_per_max_context: int  # the KV of one sequence at the full context


@dataclass(frozen=True)
class EngineKv(KvSizing):
    """``kv.model``: the lesson engine's model and the pool the engine allocated."""

    engine_bytes_per_block: int  # what the engine itself allocates per block (K and V, every layer)
    num_gpu_blocks: int
    pool_bytes: int  # num_gpu_blocks x engine_bytes_per_block
    pool_tokens: int  # pool_bytes / bytes_per_token = num_gpu_blocks x block_size


@dataclass(frozen=True)
class GpuPool:
    """The KV pool vLLM would size on the target GPU at one ``gpu_memory_utilization`` (modelled)."""

    gpu_memory_utilization: float
    kv_bytes: int  # utilization x GPU memory - weights; 0 when the weights do not fit
    num_gpu_blocks: int  # kv_bytes // bytes_per_block
    tokens: int  # num_gpu_blocks x block_size
    headroom_bytes: int  # (1 - utilization) x GPU memory: left to activations, CUDA graphs, other processes


@dataclass(frozen=True)
class CatalogueKv(KvSizing):
    """``kv.NAME`` for a catalogue model (``llama-3.1-8b``, ``llama-3.1-70b``, ...), in bf16, on one GPU."""

    gpu: str  # the course target's GPU, the pools below are sized on
    gpu_memory_bytes: int
    at_utilization: dict[str, GpuPool]  # "80", "90", "95" (percent) -> the pool


def model_name(rest: list[str]) -> tuple[str, list[str]]:
    """(the model a ``kv`` path names, the segments after it): ``model`` or the longest catalogue name the
    segments spell with their dots (``llama-3.1-8b`` arrives as ``llama-3``, ``1-8b``); ("", rest) if none."""
    if rest[:1] == [ENGINE_MODEL]:
        return ENGINE_MODEL, rest[1:]
    for k in range(len(rest), 0, -1):
        name = ".".join(rest[:k])
        if name in MODELS:
            return name, rest[k:]
    return "", rest


def known_models() -> tuple[str, ...]:
    return (ENGINE_MODEL, *MODELS)


def _common(shape: ModelShape, name: str, dtype_bytes: int, block_size: int) -> dict[str, Any]:
    per_token = shape.kv_bytes_per_token(dtype_bytes)
    return dict(
        name=name,
        layers=shape.layers,
        kv_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        dtype_bytes=dtype_bytes,
        bytes_per_token=per_token,
        block_size=block_size,
        bytes_per_block=block_size * per_token,
        weight_bytes=shape.total_params * dtype_bytes,
        max_context=shape.max_context,
        bytes_per_max_context=shape.max_context * per_token,
    )


@lru_cache(maxsize=8)
def _engine_shape(config_json: Path, name: str) -> ModelShape:
    return ModelShape.from_file(config_json, name)


def engine_kv(config: EngineConfig, view: Snapshot) -> EngineKv:
    """``kv.model``: the engine's model read from its checkpoint's config.json, sized in the engine's dtype."""
    from pykv.engine.model.loader import resolve_model_path  # the engine's own rule for 'tiny' or a folder

    name = "tiny (shipped)" if config.model == "tiny" else Path(config.model).name
    shape = _engine_shape(resolve_model_path(config.model) / "config.json", name)
    common = _common(shape, name, DTYPE_BYTES[config.dtype], config.block_size)
    return EngineKv(
        **common,
        engine_bytes_per_block=view.bytes_per_block,
        num_gpu_blocks=config.num_gpu_blocks,
        pool_bytes=config.num_gpu_blocks * view.bytes_per_block,
        pool_tokens=config.num_gpu_blocks * view.bytes_per_block // common["bytes_per_token"],
    )


@lru_cache(maxsize=64)
def catalogue_kv(name: str, block_size: int) -> CatalogueKv:
    """``kv.NAME``: a catalogue model in bf16 on the course target's GPU (vLLM's sizing, activations left out)."""
    shape = find_model(name)
    gpu = DEFAULT_TARGET.estimate().gpu
    common = _common(shape, shape.name, CATALOGUE_DTYPE_BYTES, block_size)
    memory = int(gpu.memory_gb * 1e9)  # datasheet GB are decimal

    def pool(percent: int) -> GpuPool:
        kv_bytes = max(0, memory * percent // 100 - common["weight_bytes"])
        blocks = kv_bytes // common["bytes_per_block"]
        return GpuPool(percent / 100, kv_bytes, blocks, blocks * block_size, memory * (100 - percent) // 100)

    return CatalogueKv(
        **common, gpu=gpu.name, gpu_memory_bytes=memory, at_utilization={str(p): pool(p) for p in UTILIZATIONS}
    )
