"""vLLM V0's swap space: the CPU pool a swapped-out request's KV waits in, and the CPU block tables of
the swapped requests. The KV manager owns one; it does the device side (freeing a victim's device blocks,
allocating fresh ones at swap-in) and asks the swap space for the CPU side."""

from __future__ import annotations

from typing import Sequence

from pykv.border.request import Request
from pykv.engine.kv.block_pool import BlockPool, cdiv, set_filled


class SwapSpace:
    """Rule: a group (one request, or V0's sequences of one request) swaps whole, each sequence's table on its own:
    a block its sequences share is copied once per sequence, and the sharing is gone (vLLM 0.6.3.post1
    ``SelfAttnBlockSpaceManager.swap_out`` / ``swap_in`` call ``CpuGpuBlockAllocator.swap`` per sequence, and the
    naive allocator gives each block object a block of its own)."""

    def __init__(self, pool: BlockPool, block_size: int) -> None:
        self.pool = pool  # the CPU blocks
        self.block_size = block_size
        self.block_tables: dict[str, list[int]] = {}  # swapped-out request id -> CPU block ids; changed here only

    def store(
        self, group: Sequence[Request], device_tables: dict[str, list[int]]
    ) -> dict[str, list[tuple[int, int]]] | None:
        """Take CPU blocks for the group's device tables; returns each request's copies ``[(device, cpu), ...]``, or
        None (changing nothing) when the pool lacks room. Room means what vLLM 0.6.3.post1 ``_can_swap`` counts for
        each sequence: its table's full blocks and the blocks its next token touches."""
        need = sum(max(len(device_tables[r.request_id]), cdiv(r.num_tokens, self.block_size)) for r in group)
        if need > self.pool.num_free_blocks():
            return None
        mappings = {}
        for request in group:
            table = device_tables[request.request_id]
            cpu_ids = self.pool.allocate(len(table))
            self.block_tables[request.request_id] = cpu_ids
            set_filled(self.pool, cpu_ids, request.num_computed_tokens, self.block_size)
            mappings[request.request_id] = list(zip(table, cpu_ids))
        return mappings

    def take(self, request: Request) -> list[int]:
        """Hand a request's CPU table to a swap-in (its blocks stay held until ``release``)."""
        return self.block_tables.pop(request.request_id)

    def release(self, cpu_ids: Sequence[int]) -> None:
        self.pool.free(cpu_ids)

    def free(self, request: Request) -> None:
        """Drop a swapped request's CPU blocks (it finished or was aborted while swapped)."""
        self.pool.free(self.block_tables.pop(request.request_id, []))

    def check_invariants(self) -> None:
        self.pool.check_tables(self.block_tables, "CPU")
