"""vLLM V0's swap space: the CPU pool a swapped-out request's KV waits in, and the CPU block tables of
the swapped requests. The KV manager owns one; it does the device side (freeing a victim's device blocks,
allocating fresh ones at swap-in) and asks the swap space for the CPU side."""

from __future__ import annotations

from typing import Sequence

from pykv.border.request import Request
from pykv.engine.kv.block_pool import BlockPool, cdiv, set_filled


class SwapSpace:
    """Rule: a group (one request, or V0's sequences of one request) swaps whole; a block its sequences share
    crosses once and is shared again on the CPU side (vLLM V0's ``swap_out`` of a ``SequenceGroup``)."""

    def __init__(self, pool: BlockPool, block_size: int) -> None:
        self.pool = pool  # the CPU blocks
        self.block_size = block_size
        self.block_tables: dict[str, list[int]] = {}  # swapped-out request id -> CPU block ids; changed here only

    def store(self, group: Sequence[Request], device_tables: dict[str, list[int]]
              ) -> dict[str, list[tuple[int, int]]] | None:
        """Take CPU blocks for the group's device tables; returns each request's copies ``[(device, cpu), ...]``
        (disjoint: a shared block is copied by the first sequence that holds it), or None (changing nothing)
        when the pool lacks room."""
        unique = list(dict.fromkeys(b for table in device_tables.values() for b in table))
        if len(unique) > self.pool.num_free_blocks():
            return None
        to_cpu = dict(zip(unique, self.pool.allocate(len(unique))))
        self.pool.free(to_cpu.values())  # allocate() took one reference: the tables below take theirs
        mappings, copied = {}, set()
        for request in group:
            table = device_tables[request.request_id]
            cpu_ids = [to_cpu[b] for b in table]
            self.pool.touch(cpu_ids)
            self.block_tables[request.request_id] = cpu_ids
            set_filled(self.pool, cpu_ids, request.num_computed_tokens, self.block_size)
            mappings[request.request_id] = [(b, to_cpu[b]) for b in table if b not in copied]
            copied.update(table)
        return mappings

    def num_blocks_to_swap_in(self, group: Sequence[Request], num_new_tokens: Sequence[int]) -> int:
        """Device blocks a group's swap-in touches: its CPU blocks (shared ones once), those its next tokens need,
        and the copies on write of a shared partial block its sequences append to (vLLM V0's ``_can_swap``)."""
        tables = [self.block_tables[r.request_id] for r in group]
        unique = {b for table in tables for b in table}
        grow = sum(max(0, cdiv(r.num_computed_tokens + n, self.block_size) - len(table))
                   for r, n, table in zip(group, num_new_tokens, tables))
        tails = [table[r.num_computed_tokens // self.block_size] for r, table in zip(group, tables)
                 if r.num_computed_tokens % self.block_size]
        return len(unique) + grow + len(tails) - len(set(tails))

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
