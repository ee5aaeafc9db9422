"""The KV cache tensors: the device pool, the CPU swap pool, and the copies between them."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from pykv.engine.model.loader import DTYPES
from pykv.engine.model.model import ModelConfig


@dataclass(frozen=True)
class CopyTiming:
    seconds: float  # measured wall time of the copies (synchronised on CUDA)
    num_bytes: int
    num_copies: int  # copy operations issued (1 batched copy, or one per block per layer per K/V)
    cpu_s: float = 0.0  # the engine thread's CPU time over the same copies (time.thread_time): without its waits


class CacheEngine:
    """Owns the device KV pool and the CPU swap pool.

    Layout of both: ``(num_layers, 2, num_blocks, block_size, num_kv_heads, head_dim)``, so
    ``gpu_cache[layer][0]`` is that layer's K cache in the kernels' ``(num_blocks, block_size,
    num_kv_heads, head_dim)`` layout. The CPU pool is allocated once, pinned when the device is
    CUDA (pageable memory would halve the PCIe bandwidth).
    """

    def __init__(
        self,
        model: ModelConfig,
        num_gpu_blocks: int,
        num_cpu_blocks: int,
        block_size: int,
        dtype: str,
        device: str,
        swap_copy: str = "batched",
    ) -> None:
        self.block_size = block_size
        self.device = device
        self.swap_copy = swap_copy
        per_pool = (model.num_layers, 2)
        block_shape = (block_size, model.num_kv_heads, model.head_dim)
        self.gpu_cache = torch.zeros(per_pool + (num_gpu_blocks,) + block_shape, dtype=DTYPES[dtype], device=device)
        pin = device.startswith("cuda")
        self.cpu_cache = torch.zeros(per_pool + (num_cpu_blocks,) + block_shape, dtype=DTYPES[dtype], pin_memory=pin)

    @staticmethod
    def bytes_per_block(model: ModelConfig, block_size: int, dtype: str) -> int:
        """Bytes one block holds across all layers, K and V."""
        element = torch.empty((), dtype=DTYPES[dtype]).element_size()
        return model.num_layers * 2 * block_size * model.num_kv_heads * model.head_dim * element

    def swap_out(self, mapping: list[tuple[int, int]]) -> CopyTiming:
        """Copy device blocks to CPU blocks: ``mapping`` is ``[(gpu_block, cpu_block), ...]``."""
        return self._copy(self.gpu_cache, self.cpu_cache, mapping)

    def swap_in(self, mapping: list[tuple[int, int]]) -> CopyTiming:
        """Copy CPU blocks back to device blocks: ``mapping`` is ``[(cpu_block, gpu_block), ...]``."""
        return self._copy(self.cpu_cache, self.gpu_cache, mapping)

    def copy_on_write(self, mapping: list[tuple[int, int]]) -> CopyTiming:
        """Copy device blocks to other device blocks (``[(src, dst), ...]``): a shared block's copy on write."""
        return self._copy(self.gpu_cache, self.gpu_cache, mapping)

    def _copy(self, src: torch.Tensor, dst: torch.Tensor, mapping: list[tuple[int, int]]) -> CopyTiming:
        num_bytes = len(mapping) * src[:, :, 0].numel() * src.element_size()
        self._sync()
        t0, c0 = time.perf_counter(), time.thread_time()
        if self.swap_copy == "batched":
            # Gather every block into one staging tensor, cross the bus once, scatter.
            src_ids = torch.tensor([s for s, _ in mapping], device=src.device)
            dst_ids = torch.tensor([d for _, d in mapping], device=dst.device)
            staged = src.index_select(2, src_ids).to(dst.device, non_blocking=True)  # (layers, 2, n, ...)
            dst.index_copy_(2, dst_ids, staged)
            num_copies = 1
        else:
            # Early vLLM: one copy per block, per layer, per K/V.
            for layer in range(src.shape[0]):
                for kv in range(2):
                    for s, d in mapping:
                        dst[layer, kv, d].copy_(src[layer, kv, s], non_blocking=True)
            num_copies = src.shape[0] * 2 * len(mapping)
        self._sync()
        return CopyTiming(time.perf_counter() - t0, num_bytes, num_copies, time.thread_time() - c0)

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)
