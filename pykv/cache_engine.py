"""The KV cache tensors of the device pool."""

from __future__ import annotations

import torch

from pykv.loader import DTYPES
from pykv.model import ModelConfig


class CacheEngine:
    """Owns the device KV pool: one tensor for every layer, K and V, every block.

    Layout: ``(num_layers, 2, num_blocks, block_size, num_kv_heads, head_dim)``, so
    ``kv[layer][0]`` is that layer's K cache in the kernels' ``(num_blocks, block_size,
    num_kv_heads, head_dim)`` layout, and one block of one layer is a contiguous slab.
    """

    def __init__(self, model: ModelConfig, num_blocks: int, block_size: int, dtype: str, device: str) -> None:
        self.block_size = block_size
        shape = (model.num_layers, 2, num_blocks, block_size, model.num_kv_heads, model.head_dim)
        self.gpu_cache = torch.zeros(shape, dtype=DTYPES[dtype], device=device)

    @property
    def bytes_per_block(self) -> int:
        """Bytes one block holds across all layers, K and V."""
        c = self.gpu_cache
        return c.shape[0] * c.shape[1] * c[0, 0, 0].numel() * c.element_size()
