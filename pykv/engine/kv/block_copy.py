"""The device copies a step decided, as data: the scheduler lists them on its output in the order it
decided them, and the engine runs them in that order before the forward pass (a block one copy frees may
be reused by the next)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class CopyKind(str, Enum):
    SWAP_OUT = "swap_out"  # device -> CPU swap pool (V0): pairs are (device block, CPU block)
    SWAP_IN = "swap_in"  # CPU swap pool -> device (V0): pairs are (CPU block, device block)
    COPY_ON_WRITE = "copy_on_write"  # device -> device, a shared partial block before an append: (src, dst)
    OFFLOAD_LOAD = "offload_load"  # CPU offloading tier -> device at admission (V1): (tier block, device block)


@dataclass(frozen=True)
class BlockCopy:
    """One request's copies of one kind. ``pairs`` may be empty: a sequence whose blocks a sibling's copy
    already moved still swaps (its table moves) but copies nothing."""

    kind: CopyKind
    request_id: str
    pairs: tuple[tuple[int, int], ...]  # (source block, destination block)


@dataclass(frozen=True)
class Allocation:
    """What ``KVCacheManager.allocate_slots`` did: the blocks it added, and the copy on write it decided
    (the caller lists it on the step's copies)."""

    new_blocks: list[int]
    copy_on_write: BlockCopy | None = None

    @property
    def copies(self) -> list[BlockCopy]:
        return [] if self.copy_on_write is None else [self.copy_on_write]
