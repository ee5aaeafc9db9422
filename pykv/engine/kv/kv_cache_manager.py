"""Per-request block tables over one BlockPool: allocate, append, free, and prefix-cache hits."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from pykv.border.request import Request
from pykv.engine.kv.block_copy import Allocation, BlockCopy, CopyKind
from pykv.engine.kv.block_pool import BlockHash, BlockPool, cdiv, set_filled
from pykv.engine.kv.offload_tier import OffloadTier
from pykv.engine.kv.prefix_stats import PrefixCacheStats
from pykv.engine.kv.swap_space import SwapSpace


def hash_block_tokens(parent: BlockHash | None, token_ids: Sequence[int]) -> BlockHash:
    """Chained block hash: a block's hash covers every token before it too, so equal hashes mean
    equal prefixes up to 64-bit collisions. vLLM 0.6 hashed the same way with Python's builtin hash; V1
    hashes with SHA-256 over pickled (parent, tokens, extra keys such as LoRA and cache salt), from a seed.
    pykv keeps the builtin hash in every profile: the chaining, not the hash function, is the lesson."""
    return hash((parent, tuple(token_ids)))


class KVCacheManager:
    """Maps each request's logical blocks to physical blocks of the pool.

    Token position -> slot::

        position p  ->  logical block p // block_size, offset p % block_size
        logical block i  ->  physical block_table[i]
        slot = block_table[p // block_size] * block_size + p % block_size

    With prefix caching, every full block is registered under its chained hash once its tokens
    are scheduled; a new (or re-admitted) request reuses the longest run of cached blocks, except
    that the last token is always recomputed (the model must produce logits for it).

    It owns the CPU side too: V0's swap space (``swap``) or V1's offloading tier (``offload``), over one CPU
    pool. Every copy it decides is returned to the caller as a ``BlockCopy``; nothing is queued on the side.
    """

    def __init__(
        self,
        pool: BlockPool,
        block_size: int,
        enable_prefix_caching: bool,
        cpu_pool: BlockPool | None = None,
        offload: bool = False,
        share_full_blocks: bool = False,
    ) -> None:
        self.pool = pool
        self.cpu_pool = cpu_pool or BlockPool(0)  # V0: the swap pool; V1 with offloading: the tier's blocks
        self.offload = OffloadTier(self.cpu_pool, block_size) if offload else None
        self.swap = SwapSpace(BlockPool(0) if offload else self.cpu_pool, block_size)
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.block_tables: dict[str, list[int]] = {}  # request id -> physical block ids
        self._hashes: dict[str, list[BlockHash]] = {}  # request id -> hashes of its full blocks so far
        self._num_registered: dict[str, int] = {}  # request id -> blocks already put in the prefix map
        self.prefix_stats = PrefixCacheStats()  # since the last make_prefix_cache_stats(); changed by record_lookup
        # A newly full block whose hash another block holds is swapped for that block (vLLM 0.6.3.post1
        # PrefixCachingBlockAllocator.promote_to_immutable_block); V1 keeps both (VllmProfile.shares_full_blocks).
        self.share_full_blocks = share_full_blocks

    def block_hashes(self, request: Request) -> list[BlockHash]:
        """Hashes of every full block of the request's tokens (extended lazily; ids never change)."""
        hashes = self._hashes.setdefault(request.request_id, [])
        tokens = request.all_token_ids
        bs = self.block_size
        while (len(hashes) + 1) * bs <= len(tokens):
            i = len(hashes)
            hashes.append(hash_block_tokens(hashes[-1] if hashes else None, tokens[i * bs : (i + 1) * bs]))
        return hashes

    def get_computed_blocks(self, request: Request) -> list[int]:
        """Longest cached prefix of the request, in whole blocks, leaving the last token to compute."""
        if not self.enable_prefix_caching:
            return []
        max_blocks = (request.num_tokens - 1) // self.block_size
        hits = []
        for block_hash in self.block_hashes(request)[:max_blocks]:
            block_id = self.pool.lookup(block_hash)
            if block_id is None:
                break
            hits.append(block_id)
        return hits

    def num_blocks_to_allocate(self, request: Request, num_tokens: int, new_computed_blocks: Sequence[int] = ()) -> int:
        """Free blocks the request needs to hold ``num_tokens`` tokens: new ones, plus cached hits that sit in the
        free queue (reviving one takes it out of the free count, as in vLLM V1's get_num_blocks_to_allocate)."""
        table = self.block_tables.get(request.request_id, ())
        num_new = max(cdiv(num_tokens, self.block_size) - len(table) - len(new_computed_blocks), 0)
        return num_new + sum(1 for b in new_computed_blocks if self.pool.blocks[b].ref_cnt == 0)

    def allocate_slots(
        self,
        request: Request,
        num_new_tokens: int,
        new_computed_blocks: Sequence[int] = (),
        *,
        num_reserved_tokens: int = 0,
        keep_free: int = 0,
    ) -> Allocation | None:
        """Make room for ``num_new_tokens`` more tokens of ``request``.

        ``new_computed_blocks`` are prefix-cache hits for a request being admitted; they cover the
        first tokens. ``num_reserved_tokens`` asks for blocks up to that many tokens now (vLLM V0 allocates
        a whole prompt at admission), though only the computed ones are filled. ``keep_free`` blocks must
        stay free afterwards (a watermark). Returns the newly allocated block ids and the copy on write it
        decided (the caller lists it on the step's copies), or None (changing nothing) if the pool lacks
        free blocks.
        """
        num_computed = request.num_computed_tokens + len(new_computed_blocks) * self.block_size
        total = num_computed + num_new_tokens
        need = self.num_blocks_to_allocate(request, max(total, num_reserved_tokens), new_computed_blocks)
        shared_tail = self._shared_tail(request) if num_new_tokens else None
        if need + (shared_tail is not None) + keep_free > self.pool.num_free_blocks():
            return None
        table = self.block_tables.setdefault(request.request_id, [])
        cow = None if shared_tail is None else self._copy_on_write(request, table, shared_tail)
        num_required = cdiv(max(total, num_reserved_tokens), self.block_size) - len(table) - len(new_computed_blocks)
        self.pool.touch(new_computed_blocks)
        table.extend(new_computed_blocks)
        new_blocks = self.pool.allocate(max(num_required, 0))
        for block_id in new_blocks:
            self.pool.blocks[block_id].computed_by = request.request_id
        table.extend(new_blocks)
        set_filled(self.pool, table, total, self.block_size)
        if self.enable_prefix_caching:
            self._register_full_blocks(request, table, total)
        return Allocation(new_blocks, cow)

    def _shared_tail(self, request: Request) -> int | None:
        """The index of the partly filled block the request writes next, if other sequences share it (a forked
        sequence's last prompt block); None otherwise."""
        table, i = self.block_tables.get(request.request_id, ()), request.num_computed_tokens // self.block_size
        if request.num_computed_tokens % self.block_size and i < len(table) and self.pool.blocks[table[i]].ref_cnt > 1:
            return i
        return None

    def _copy_on_write(self, request: Request, table: list[int], i: int) -> BlockCopy:
        """Copy-on-write (vLLM V0's ``append_slots``): the first sequence to append to a shared partial block gets a
        copy of it; the last holder writes in place. The engine copies the KV before the forward pass."""
        src = table[i]
        (dst,) = self.pool.allocate(1)
        self.pool.blocks[dst].computed_by = self.pool.blocks[src].computed_by
        self.pool.blocks[dst].num_tokens_filled = self.pool.blocks[src].num_tokens_filled
        table[i] = dst
        self.pool.free([src])
        return BlockCopy(CopyKind.COPY_ON_WRITE, request.request_id, ((src, dst),))

    def fork(self, parent: Request, child: Request) -> None:
        """Parallel sampling: the child sequence shares every block of the parent (one more reference each)."""
        table = list(self.block_tables[parent.request_id])
        self.pool.touch(table)
        self.block_tables[child.request_id] = table
        self._num_registered[child.request_id] = self._num_registered.get(parent.request_id, 0)

    def _register_full_blocks(self, request: Request, table: list[int], num_tokens: int) -> None:
        hashes = self.block_hashes(request)
        start = self._num_registered.get(request.request_id, 0)
        num_full = min(num_tokens // self.block_size, len(hashes))
        for i in range(start, num_full):
            held = self.pool.lookup(hashes[i])
            if self.share_full_blocks and held is not None and held != table[i]:
                self.pool.touch([held])
                self.pool.free([table[i]])
                table[i] = held
            else:
                self.pool.cache_block(table[i], hashes[i])
        self._num_registered[request.request_id] = max(start, num_full)

    def record_lookup(self, request: Request, hit_blocks: Sequence[int], admitted: bool = True) -> None:
        """Count one prefix-cache lookup in tokens, splitting hits into the request's own blocks (surviving
        its preemption) and other requests' blocks, and noting lookups by requests preempted before. A lookup
        that did not lead to admission (``admitted=False``) is kept apart: vLLM 0.10 counted those too."""
        if not self.enable_prefix_caching:
            return
        s, hits = self.prefix_stats, len(hit_blocks) * self.block_size
        if not admitted:
            self.prefix_stats = replace(
                s,
                unadmitted_queries=s.unadmitted_queries + request.num_tokens,
                unadmitted_hits=s.unadmitted_hits + hits,
            )
            return
        own = sum(1 for b in hit_blocks if self.pool.blocks[b].computed_by == request.request_id)
        preempted = request.num_preemptions > 0
        self.prefix_stats = replace(
            s,
            queries=s.queries + request.num_tokens,
            hits=s.hits + hits,
            hits_own=s.hits_own + own * self.block_size,
            hits_shared=s.hits_shared + (len(hit_blocks) - own) * self.block_size,
            preempted_queries=s.preempted_queries + (request.num_tokens if preempted else 0),
            preempted_hits=s.preempted_hits + (hits if preempted else 0),
        )

    def record_external_lookup(self, request: Request, num_local_tokens: int, num_loaded_tokens: int) -> None:
        """Count one lookup in the offloading tier (vLLM 0.33.0 ``Scheduler.schedule``: queries are the tokens past
        the local hit, hits the tokens loaded)."""
        if request.num_preemptions:
            return  # a re-admission (its loads still count in pykv:offload_loaded_tokens)
        s = self.prefix_stats
        self.prefix_stats = replace(
            s,
            external_queries=s.external_queries + request.num_tokens - num_local_tokens,
            external_hits=s.external_hits + num_loaded_tokens,
        )

    def make_prefix_cache_stats(self) -> PrefixCacheStats:
        """Get (and reset) the prefix-cache stats since the last call (vLLM V1's hand-over of per-step deltas)."""
        stats, self.prefix_stats = self.prefix_stats, PrefixCacheStats()
        return stats

    def free(self, request: Request) -> None:
        """Release the request's blocks tail-first, so its prefix stays cached longest. A block registered for a
        chunk that never ran (a victim unscheduled in the step that allocated it) loses its hash with its last
        holder: nobody may hit KV that was never computed."""
        table = self.block_tables.pop(request.request_id, [])
        for block_id in table[request.num_computed_tokens // self.block_size :]:
            if self.pool.blocks[block_id].ref_cnt == 1:
                self.pool.uncache(block_id)
        self.pool.free(reversed(table))
        self._num_registered.pop(request.request_id, None)
        if self.offload is not None:
            self.offload.restart(request.request_id)

    def forget(self, request: Request) -> None:
        """Drop per-request bookkeeping once a request is finished."""
        self._hashes.pop(request.request_id, None)
        if self.offload is not None:
            self.offload.finish(request.request_id)

    def num_blocks_of(self, request: Request) -> int:
        return len(self.block_tables.get(request.request_id, ()))

    # ---- the CPU offloading tier (V1) ----------------------------------------------------------

    def offloaded_hits(self, request: Request, num_local_blocks: int) -> list[int]:
        """Tier blocks holding the request's next blocks after its ``num_local_blocks`` device hits, leaving the
        last token to compute (as the device lookup does)."""
        if self.offload is None:
            return []
        max_blocks = (request.num_tokens - 1) // self.block_size
        return self.offload.hits(self.block_hashes(request)[num_local_blocks:max_blocks])

    def load_offloaded(self, request: Request, tier_blocks: Sequence[int], num_local_blocks: int) -> BlockCopy:
        """The copies that fill the request's freshly allocated blocks after its local hits from the tier (the tier
        pins and ranks them, see ``OffloadTier.load``)."""
        assert self.offload is not None, "no offloading tier"
        table = self.block_tables[request.request_id]
        hashes = self.block_hashes(request)[num_local_blocks : num_local_blocks + len(tier_blocks)]
        assert self.offload.load(request.request_id, num_local_blocks, hashes) == list(tier_blocks)
        pairs = zip(tier_blocks, table[num_local_blocks : num_local_blocks + len(tier_blocks)])
        return BlockCopy(CopyKind.OFFLOAD_LOAD, request.request_id, tuple(pairs))

    def offload_stores(self, computed: Sequence[tuple[Request, int]]) -> tuple[list[tuple[int, int]], int]:
        """After a forward pass, in batch order: offer each request's full *prompt* blocks computed so far
        (``computed`` = (request, tokens computed now); vLLM 0.33.0 ``_calc_num_offloadable_tokens`` with
        ``offload_prompt_only``) to the tier, then end the tier's step. Returns the copies
        ``[(device block, tier block), ...]`` and how many requests' batches the tier refused whole."""
        if self.offload is None:
            return [], 0
        refused = self.offload.num_failed_stores
        copies = [
            copy
            for request, num_computed in computed
            for copy in self.offload.offer(
                request.request_id,
                self.block_hashes(request),
                self.block_tables[request.request_id],
                min(num_computed, request.num_prompt_tokens),
            )
        ]
        self.offload.end_step()
        return copies, self.offload.num_failed_stores - refused

    # ---- swapping (V0) -------------------------------------------------------------------------

    def swap_out(self, group: Sequence[Request]) -> list[BlockCopy] | None:
        """Move a group's block tables to the swap space (see ``SwapSpace``); the device blocks only lose a
        reference (a prefix-cached one shared with another request stays). Returns one copy per request, or
        None (changing nothing) when the swap space lacks room."""
        tables = {r.request_id: self.block_tables.get(r.request_id, []) for r in group}
        mappings = self.swap.store(group, tables)
        if mappings is None:
            return None
        for request in group:
            self.free(request)
        return [BlockCopy(CopyKind.SWAP_OUT, rid, tuple(pairs)) for rid, pairs in mappings.items()]

    def swap_in(self, group: Sequence[Request]) -> list[BlockCopy]:
        """Bring a swapped group's blocks back to fresh device blocks, each request's on its own (see
        ``SwapSpace``); one copy per request."""
        copies = []
        for request in group:
            cpu_ids = self.swap.take(request)
            gpu_ids = self.pool.allocate(len(cpu_ids))
            for g in gpu_ids:
                self.pool.blocks[g].computed_by = request.request_id
            self.block_tables[request.request_id] = gpu_ids
            set_filled(self.pool, gpu_ids, request.num_computed_tokens, self.block_size)
            self.swap.release(cpu_ids)
            if self.enable_prefix_caching:
                self._register_full_blocks(request, gpu_ids, request.num_computed_tokens)
            copies.append(BlockCopy(CopyKind.SWAP_IN, request.request_id, tuple(zip(cpu_ids, gpu_ids))))
        return copies

    def free_swapped(self, request: Request) -> None:
        self.swap.free(request)

    def trim(self, request: Request) -> None:
        """Give back blocks beyond the request's computed tokens (allocated for a chunk that was taken back)."""
        table = self.block_tables.get(request.request_id, [])
        keep = cdiv(request.num_computed_tokens, self.block_size)
        extra, table[keep:] = table[keep:], []
        for block_id in extra:
            if self.pool.blocks[block_id].ref_cnt == 1:
                self.pool.uncache(block_id)
        self.pool.free(reversed(extra))

    def check_invariants(self) -> None:
        self.pool.check_tables(self.block_tables)
        self.swap.check_invariants()
        assert not self.block_tables.keys() & self.swap.block_tables.keys(), "a request holds blocks in both pools"
        if self.offload is not None:
            self.offload.check_invariants()
