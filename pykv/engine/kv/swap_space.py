"""Moving a request's KV between the device pool and CPU memory: vLLM V0's swap (a request, or a group of
sequences, out to the CPU pool and back) and V1's offloading tier (full blocks stored as they are computed,
loaded back at admission). A part of ``KVCacheManager``, kept apart because it is a concept of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from pykv.border.request import Request
from pykv.engine.kv.block_pool import BlockPool, cdiv

if TYPE_CHECKING:
    from pykv.engine.kv.offload_tier import OffloadTier


class KVMoves:
    """The copies between pools. A part of ``KVCacheManager``: the fields below and the methods it calls
    (``block_hashes``, ``free``, ``_set_filled``, ``_register_full_blocks``) are the manager's."""

    pool: BlockPool
    cpu_pool: BlockPool
    offload: Optional[OffloadTier]
    block_size: int
    enable_prefix_caching: bool
    block_tables: dict[str, list[int]]
    cpu_block_tables: dict[str, list[int]]
    device_ops: list[tuple]
    _num_offered: dict[str, int]

    # ---- the CPU offloading tier (V1) ----------------------------------------------------------

    def offloaded_hits(self, request: Request, num_local_blocks: int) -> list[int]:
        """Tier blocks holding the request's next blocks after its ``num_local_blocks`` device hits, leaving the
        last token to compute (as the device lookup does)."""
        if self.offload is None:
            return []
        max_blocks = (request.num_tokens - 1) // self.block_size
        return self.offload.hits(self.block_hashes(request)[num_local_blocks:max_blocks])

    def load_offloaded(self, request: Request, tier_blocks: Sequence[int],
                       num_local_blocks: int) -> list[tuple[int, int]]:
        """The copies ``[(tier block, device block), ...]`` that fill the request's freshly allocated blocks after
        its local hits; the tier blocks become the most recently used."""
        table = self.block_tables[request.request_id]
        self.offload.touch(tier_blocks)
        return list(zip(tier_blocks, table[num_local_blocks:num_local_blocks + len(tier_blocks)]))

    def offload_stores(self, computed: Sequence[tuple[Request, int]]) -> list[tuple[int, int]]:
        """After a forward pass: store each request's newly full blocks (``computed`` = (request, tokens computed
        now)) to the tier; returns the copies ``[(device block, tier block), ...]``."""
        if self.offload is None:
            return []
        offered = []
        for request, num_computed in computed:
            table, hashes = self.block_tables[request.request_id], self.block_hashes(request)
            start = self._num_offered.get(request.request_id, 0)
            num_full = min(num_computed // self.block_size, len(hashes), len(table))
            offered += [(hashes[i], table[i], request.request_id) for i in range(start, num_full)]
            self._num_offered[request.request_id] = max(start, num_full)
        return self.offload.store(offered)

    # ---- swapping ---------------------------------------------------------------------------

    def swap_out(self, group: Sequence[Request]) -> Optional[dict[str, list[tuple[int, int]]]]:
        """Move the block tables of a group (one request, or V0's sequences of one request) to the CPU pool, a
        block the sequences share copied once (vLLM V0's ``swap_out`` of a ``SequenceGroup``). Returns each
        request's copies ``[(gpu, cpu), ...]`` (disjoint), or None (changing nothing) when the CPU pool lacks
        room. Device blocks only lose a reference; a prefix-cached one shared with another request stays."""
        tables = {r.request_id: self.block_tables.get(r.request_id, []) for r in group}
        unique = list(dict.fromkeys(b for table in tables.values() for b in table))
        if len(unique) > self.cpu_pool.num_free_blocks():
            return None
        to_cpu = dict(zip(unique, self.cpu_pool.allocate(len(unique))))
        self.cpu_pool.free(to_cpu.values())  # allocate() took one reference: the tables below take theirs
        mappings, copied = {}, set()
        for request in group:
            cpu_ids = [to_cpu[b] for b in tables[request.request_id]]
            self.cpu_pool.touch(cpu_ids)
            self.cpu_block_tables[request.request_id] = cpu_ids
            self._set_filled(self.cpu_pool, cpu_ids, request.num_computed_tokens)
            mappings[request.request_id] = [(b, to_cpu[b]) for b in tables[request.request_id] if b not in copied]
            copied.update(tables[request.request_id])
            self.device_ops.append(("swap_out", request.request_id))
            self.free(request)
        return mappings

    def num_blocks_to_swap_in(self, group: Sequence[Request], num_new_tokens: Sequence[int]) -> int:
        """Device blocks a group's swap-in touches: its CPU blocks (shared ones once), those its next tokens need,
        and the copies on write of a shared partial block its sequences append to (vLLM V0's ``_can_swap``)."""
        tables = [self.cpu_block_tables[r.request_id] for r in group]
        unique = {b for table in tables for b in table}
        grow = sum(max(0, cdiv(r.num_computed_tokens + n, self.block_size) - len(table))
                   for r, n, table in zip(group, num_new_tokens, tables))
        tails = [table[r.num_computed_tokens // self.block_size] for r, table in zip(group, tables)
                 if r.num_computed_tokens % self.block_size]
        return len(unique) + grow + len(tails) - len(set(tails))

    def swap_in(self, group: Sequence[Request]) -> dict[str, list[tuple[int, int]]]:
        """Bring a swapped group's blocks back to fresh device blocks, shared ones shared again; returns each
        request's copies ``[(cpu, gpu), ...]`` (disjoint)."""
        to_gpu: dict[int, int] = {}
        mappings = {}
        for request in group:
            cpu_ids = self.cpu_block_tables.pop(request.request_id)
            fresh = [c for c in dict.fromkeys(cpu_ids) if c not in to_gpu]
            for c, g in zip(fresh, self.pool.allocate(len(fresh))):
                to_gpu[c] = g
                self.pool.blocks[g].computed_by = request.request_id
                self.pool.free([g])  # allocate() took one reference: the tables take theirs
            gpu_ids = [to_gpu[c] for c in cpu_ids]
            self.pool.touch(gpu_ids)
            self.block_tables[request.request_id] = gpu_ids
            self._set_filled(self.pool, gpu_ids, request.num_computed_tokens)
            self.cpu_pool.free(cpu_ids)
            if self.enable_prefix_caching:
                self._register_full_blocks(request, gpu_ids, request.num_computed_tokens)
            mappings[request.request_id] = [(c, to_gpu[c]) for c in fresh]
            self.device_ops.append(("swap_in", request.request_id))
        return mappings

    def trim(self, request: Request) -> None:
        """Give back blocks beyond the request's computed tokens (allocated for a chunk that was taken back)."""
        table = self.block_tables.get(request.request_id, [])
        keep = cdiv(request.num_computed_tokens, self.block_size)
        extra, table[keep:] = table[keep:], []
        for block_id in extra:
            if self.pool.blocks[block_id].ref_cnt == 1:
                self.pool.uncache(block_id)
        self.pool.free(reversed(extra))

    def take_device_ops(self) -> list[tuple]:
        """The device copies decided since the last call, in the order they were decided: ("swap_out", request),
        ("swap_in", request), ("cow", request, src, dst). The engine runs them in this order before the forward
        pass: a block freed by one may be reused by a later one in the same step."""
        ops, self.device_ops = self.device_ops, []
        return ops

    def free_swapped(self, request: Request) -> None:
        self.cpu_pool.free(self.cpu_block_tables.pop(request.request_id, []))
