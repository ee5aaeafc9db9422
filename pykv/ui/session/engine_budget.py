"""How much engine memory the app may hand out, sized from the machine, and one session's share of it.

The app-wide budget is half the memory this process may use (the machine's RAM, or its cgroup's limit when
lower), at most 64 GiB; one session's engine (KV pools + a full history, ``lab.memory_estimate``) may take
at most 1/16 of it and never more than 512 MiB, so one link (``num_gpu_blocks=512&block_size=256&...``,
2.4 GB) cannot take the room's engines: the default session needs ~131 MiB, the sidebar's largest pools
~290 MiB on the shipped model."""

from __future__ import annotations

import os
from pathlib import Path

MIN_APP_BYTES, MAX_APP_BYTES = 1 * 2**30, 64 * 2**30
SESSION_SHARE = 16  # one session's engine: at most this fraction of the app's budget ...
MAX_SESSION_BYTES = 512 * 2**20  # ... and at most this


def usable_memory() -> int:
    """Bytes this process may use: physical RAM, or the cgroup (v2 or v1) limit when that is lower."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 16 * 2**30
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def app_engine_bytes(memory: int | None = None) -> int:
    """The engines' budget for the whole app: half of ``memory`` (usable_memory()), within 1 and 64 GiB."""
    return max(MIN_APP_BYTES, min(MAX_APP_BYTES, (usable_memory() if memory is None else memory) // 2))


def session_engine_bytes(app_bytes: int) -> int:
    """The most one session's engine may take under an app budget of ``app_bytes``."""
    return min(MAX_SESSION_BYTES, app_bytes // SESSION_SHARE)
