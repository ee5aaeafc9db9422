"""The physical KV blocks of one pool: reference counts, the free queue and the prefix-hash map."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable

BlockHash = int


def cdiv(a: int, b: int) -> int:
    """Blocks of ``b`` slots that ``a`` tokens fill (a ceiling division)."""
    return -(-a // b)


def set_filled(pool: "BlockPool", table: list[int], num_tokens: int, block_size: int) -> None:
    """Record how many of each block's slots the first ``num_tokens`` tokens of ``table`` fill."""
    for i, block_id in enumerate(table):
        pool.blocks[block_id].num_tokens_filled = max(0, min(block_size, num_tokens - i * block_size))


@dataclass(slots=True)  # one per block of a pool: slots halve its memory
class Block:
    """One physical block of ``block_size`` token slots.

    ``ref_cnt`` counts the requests whose block tables hold it. ``block_hash`` is set while the
    block holds a full, hashed prefix block; it survives the block being freed (ref 0) so a later
    request can hit it, until the block is handed out again (evicted).
    """

    block_id: int
    ref_cnt: int = 0  # changed by BlockPool only
    block_hash: BlockHash | None = None  # changed by BlockPool only
    num_tokens_filled: int = 0  # set by KVCacheManager for display: how many slots hold KV
    computed_by: str | None = None  # set by KVCacheManager: the request whose KV fills it


class BlockPool:
    """All physical blocks of a pool.

    Free queue rule (vLLM V1's ``FreeKVCacheBlockQueue``): blocks with ref 0 wait in LRU order;
    ``allocate`` takes from the front, freeing appends at the back. A cached free block (hash
    kept) stays in the queue and can be revived by a prefix hit, which removes it from the queue.
    Taking a cached block off the front evicts it: its hash leaves the prefix map. Callers free a
    request's blocks tail-first, so the tail of a prefix is evicted before its head.

    ``free_unhashed_first`` (vLLM 0.33.0 ``v1/core/block_pool.py`` ``BlockPool.free_blocks``): a freed
    block without a hash (never matched by a prefix hit; every block when prefix caching is off) goes
    to the *front* of the queue, in the order freed, and is handed out first; hashed ones still join
    the back. vLLM 0.10.2 appends every freed block at the back.

    ``null_block`` (vLLM V1, 0.10.2 and 0.33.0 ``v1/core/block_pool.py`` ``BlockPool.__init__``): block 0
    leaves the free queue for good as the null block, a placeholder no full-attention block table holds,
    so a pool of ``num_blocks`` hands out ``num_blocks - 1``::

        block id:  0    1  2  3 ... N-1
                  null  |<- usable: the free queue ->|
    """

    def __init__(self, num_blocks: int, *, null_block: bool = False, free_unhashed_first: bool = False) -> None:
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.null_block: int | None = 0 if null_block and num_blocks else None  # fixed at construction
        self.free_unhashed_first = free_unhashed_first
        first = 0 if self.null_block is None else 1
        # block_id -> None, in eviction order (front = next to hand out)
        self.free_queue: OrderedDict[int, None] = OrderedDict((i, None) for i in range(first, num_blocks))
        self.cached: dict[BlockHash, int] = {}  # prefix hash -> block id holding it
        self.num_evictions = 0

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_usable_blocks(self) -> int:
        """The blocks a request can hold: all but the null block."""
        return self.num_blocks - (self.null_block is not None)

    def num_free_blocks(self) -> int:
        return len(self.free_queue)

    def usage(self) -> float:
        """Share of the usable blocks in use (V1's ``BlockPool.get_usage`` leaves the null block out)."""
        if not self.num_usable_blocks:
            return 0.0
        return 1.0 - self.num_free_blocks() / self.num_usable_blocks

    def allocate(self, n: int) -> list[int]:
        """Hand out ``n`` blocks from the front of the free queue, evicting any cached hash."""
        if n > len(self.free_queue):
            raise RuntimeError(f"asked for {n} blocks with {len(self.free_queue)} free")
        return [self._hand_out(self.free_queue.popitem(last=False)[0]) for _ in range(n)]

    def take(self, block_ids: Iterable[int]) -> list[int]:
        """Hand out these free blocks, wherever they sit in the free queue, evicting any cached hash (a pool whose
        owner picks its own victims: the offloading tier's ranking)."""
        ids = list(block_ids)
        for block_id in ids:
            del self.free_queue[block_id]
        return [self._hand_out(block_id) for block_id in ids]

    def _hand_out(self, block_id: int) -> int:
        block = self.blocks[block_id]
        if block.block_hash is not None:
            if self.cached.get(block.block_hash) == block_id:
                del self.cached[block.block_hash]
            block.block_hash = None
            self.num_evictions += 1
        block.ref_cnt = 1
        block.num_tokens_filled = 0
        block.computed_by = None
        return block_id

    def requeue(self, block_ids: Iterable[int]) -> None:
        """Move these free blocks to the back of the free queue, in the order given (an owner that ranks its blocks
        keeps the queue in its eviction order)."""
        for block_id in block_ids:
            self.free_queue.move_to_end(block_id)

    def lookup(self, block_hash: BlockHash) -> int | None:
        return self.cached.get(block_hash)

    def touch(self, block_ids: Iterable[int]) -> None:
        """Take a reference on cached blocks found by a prefix hit (reviving free ones)."""
        for block_id in block_ids:
            block = self.blocks[block_id]
            if block.ref_cnt == 0:
                del self.free_queue[block_id]
            block.ref_cnt += 1

    def free(self, block_ids: Iterable[int]) -> None:
        """Drop one reference on each block, in the order given; ref-0 blocks join the queue's back (with
        ``free_unhashed_first``, the unhashed ones its front, keeping their order)."""
        front = []
        for block_id in block_ids:
            block = self.blocks[block_id]
            assert block.ref_cnt > 0, f"double free of block {block_id}"
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                if self.free_unhashed_first and block.block_hash is None:
                    front.append(block_id)
                else:
                    self.free_queue[block_id] = None
        for block_id in reversed(front):
            self.free_queue[block_id] = None
            self.free_queue.move_to_end(block_id, last=False)

    def cache_block(self, block_id: int, block_hash: BlockHash) -> None:
        """Register a full block under its prefix hash (first holder of a hash wins)."""
        block = self.blocks[block_id]
        if block.block_hash is not None:
            return
        if block_hash in self.cached:
            return  # another block already holds this prefix; this one stays private
        block.block_hash = block_hash
        self.cached[block_hash] = block_id

    def uncache(self, block_id: int) -> None:
        """Take a block's hash out of the prefix map (its KV was never computed: its chunk was unscheduled)."""
        block = self.blocks[block_id]
        if block.block_hash is not None and self.cached.get(block.block_hash) == block_id:
            del self.cached[block.block_hash]
        block.block_hash = None

    def check_tables(self, tables: dict[str, list[int]], pool_name: str = "device") -> None:
        """The pool's invariants, and that each block's ref count is the number of ``tables`` (request -> block ids)
        holding it, none twice."""
        self.check_invariants()
        refs = [0] * self.num_blocks
        for request_id, table in tables.items():
            assert len(set(table)) == len(table), f"request {request_id} holds a {pool_name} block twice"
            for block_id in table:
                refs[block_id] += 1
        for block in self.blocks:
            assert block.ref_cnt == refs[block.block_id], (
                f"{pool_name} block {block.block_id}: ref count {block.ref_cnt} but held by {refs[block.block_id]} "
                "block tables"
            )

    def check_invariants(self) -> None:
        if self.null_block is not None:
            null = self.blocks[self.null_block]
            assert null.ref_cnt == 0 and null.block_hash is None, "the null block was handed out or cached"
            assert self.null_block not in self.free_queue, "the null block is in the free queue"
        for block in self.blocks:
            assert block.ref_cnt >= 0, f"block {block.block_id} has negative ref count"
            if block.block_id == self.null_block:
                continue
            assert (block.ref_cnt == 0) == (block.block_id in self.free_queue), (
                f"block {block.block_id}: ref {block.ref_cnt} but in free queue = {block.block_id in self.free_queue}"
            )
            if block.block_hash is not None:
                assert self.cached.get(block.block_hash) == block.block_id, f"block {block.block_id} hash not in map"
        for block_hash, block_id in self.cached.items():
            assert self.blocks[block_id].block_hash == block_hash, f"prefix map points {block_hash} at wrong block"
