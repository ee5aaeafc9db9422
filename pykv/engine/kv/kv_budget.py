"""How much memory a KV pool may take (``pykv.engine.kv.sizing.check_pool_budget`` checks a sizing against it before
any block or tensor is allocated: a bad pool size gets a message with the largest allowed value instead of a
MemoryError, or the machine's OOM killer)."""

from __future__ import annotations

import os

import torch

from pykv.border.config import ConfigError, show_value
from pykv.border.limits import MAX_KV_BYTES, MAX_KV_BYTES_ENV


def kv_pool_budget(device: str) -> int:
    """Bytes one KV pool on ``device`` may take: ``$PYKV_MAX_KV_BYTES`` where set; else on CUDA the GPU's free
    memory, and in RAM the smaller of ``MAX_KV_BYTES`` (8 GiB) and half the memory available now."""
    text = os.environ.get(MAX_KV_BYTES_ENV, "").strip()
    if text:
        if not text.isdigit() or len(text) > 20 or int(text) < 1:
            raise ConfigError(None, f"{MAX_KV_BYTES_ENV} must be a whole number of bytes, got {show_value(text)}.")
        return int(text)
    if device.startswith("cuda"):
        return torch.cuda.mem_get_info(device)[0]
    available = _available_ram()
    return MAX_KV_BYTES if available is None else min(MAX_KV_BYTES, available // 2)


def _available_ram() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), in bytes; None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
