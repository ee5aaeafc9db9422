"""vLLM V1's CPU offloading tier (``--kv-offloading-size``; 0.11.1+ with ``--kv-offloading-backend native``, the
size alone in 0.33): a cache of full, hashed KV blocks in CPU memory, beside the device pool, that survives a
recompute preemption.

Transcribed in spirit from vLLM 0.33.0: the OffloadingConnector's scheduler side
(``vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py``: ``get_num_new_matched_tokens``
looks blocks up after the local prefix-cache hit, ``_build_store_jobs`` stores blocks once they are computed,
``_build_connector_meta`` flushes a preempted request's pending stores) and its CPU manager's LRU policy
(``vllm/v1/kv_offload/cpu/policies/lru.py``, ``LRUCachePolicy``).

The rule, on a ``BlockPool`` whose free queue *is* the LRU order::

    store(hash):  take the free queue's front block (evicting its old hash), register the hash,
                  free it again -> it sits at the back: most recently used
    hit(hash):    the block holding the hash; loading it moves it to the back (touch + free)
    every tier block has ref 0 between steps: nothing in the tier is pinned across a step

Only full blocks are stored (their chained hash names the whole prefix); a partial last block never is.
Where pykv differs: vLLM stores and loads asynchronously (a request with a load waits a step in
WAITING_FOR_REMOTE_KVS; a preemption waits for its pending stores); pykv copies synchronously, stores
right after the forward pass that computed the blocks and loads at admission, so no transfer is ever
pending and each one's time is measured in the step that made it.
"""

from __future__ import annotations

from typing import Sequence

from pykv.engine.kv.block_pool import BlockHash, BlockPool


class OffloadTier:
    def __init__(self, pool: BlockPool, block_size: int) -> None:
        self.block_size = block_size
        self.pool = pool  # the CPU blocks; their free queue is the LRU order (front = evicted next)
        self.num_stored_blocks = 0  # blocks ever stored; changed by store() only
        self.num_offered: dict[str, int] = {}  # request id -> its blocks already offered; changed by offer/forget

    @property
    def num_blocks(self) -> int:
        return self.pool.num_blocks

    def hits(self, hashes: Sequence[BlockHash]) -> list[int]:
        """The tier blocks holding the leading run of ``hashes`` (stops at the first miss)."""
        found = []
        for block_hash in hashes:
            block_id = self.pool.lookup(block_hash)
            if block_id is None:
                break
            found.append(block_id)
        return found

    def touch(self, block_ids: Sequence[int]) -> None:
        """Blocks being loaded become the most recently used."""
        self.pool.touch(block_ids)
        self.pool.free(block_ids)

    def offer(self, request_id: str, hashes: Sequence[BlockHash], table: Sequence[int],
              num_computed: int) -> list[tuple[BlockHash, int, str]]:
        """The request's full blocks not yet offered, as ``(hash, device block, request id)`` for ``store``."""
        start = self.num_offered.get(request_id, 0)
        num_full = min(num_computed // self.block_size, len(hashes), len(table))
        self.num_offered[request_id] = max(start, num_full)
        return [(hashes[i], table[i], request_id) for i in range(start, num_full)]

    def forget(self, request_id: str) -> None:
        """The request's device blocks were freed: re-admitted, it offers every block again (as vLLM)."""
        self.num_offered.pop(request_id, None)

    def store(self, blocks: Sequence[tuple[BlockHash, int, str]]) -> list[tuple[int, int]]:
        """Store device blocks ``[(hash, device block, request id), ...]`` not already in the tier; returns the
        copies to make,
        ``[(device block, tier block), ...]``. Each store evicts the least recently used block when the tier is
        full; a batch larger than the tier keeps its last blocks (the earlier ones would be evicted at once)."""
        new = list({h: (h, gpu, rid) for h, gpu, rid in blocks if self.pool.lookup(h) is None}.values())
        new = new[max(0, len(new) - self.num_blocks):]
        copies = []
        for block_hash, gpu_block, request_id in new:
            (cpu_block,) = self.pool.allocate(1)
            self.pool.cache_block(cpu_block, block_hash)
            block = self.pool.blocks[cpu_block]
            block.num_tokens_filled, block.computed_by = self.block_size, request_id
            self.pool.free([cpu_block])
            copies.append((gpu_block, cpu_block))
        self.num_stored_blocks += len(copies)
        return copies

    def check_invariants(self) -> None:
        self.pool.check_invariants()
        assert all(b.ref_cnt == 0 for b in self.pool.blocks), "a tier block is pinned between steps"
