"""vLLM V1's CPU offloading tier (``--kv-offloading-size``; 0.11.1+ with ``--kv-offloading-backend native``, the
size alone in 0.33): a cache of full, hashed KV blocks of *prompts* in CPU memory, beside the device pool, that
survives a recompute preemption.

Transcribed from vLLM 0.33.0 with its defaults (``OffloadingConnector``, ``eviction_policy="lru"``, one device
block per offloaded chunk, no ``store_threshold``):

- **What is stored: prompt blocks only.** ``OffloadingSpec.__init__`` (``vllm/v1/kv_offload/base.py``) reads
  ``offload_prompt_only`` from the connector's extra config, default ``True``, and ``--kv-offloading-size`` sets no
  extra config but the size (``VllmConfig._post_init_kv_transfer_config``). The connector's scheduler half
  (``vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py``) caps what a store may cover at
  ``_calc_num_offloadable_tokens``: ``min(computed, num_tokens, num_prompt_tokens)``. ``Request.num_prompt_tokens``
  never changes (a re-admitted victim's output is recomputed but stays output), so a victim's generated tokens are
  recomputed every time, and the block holding the last prompt token and the first output ones is never full of
  prompt: it is never stored either.
- **When: after the step that computed them, one batch per request, all or nothing.** ``_build_store_jobs`` offers
  each scheduled request's full offloadable blocks from ``next_stored_chunk_idx`` on (the already-stored ones
  included) to ``CPUOffloadingManager.prepare_store`` (``vllm/v1/kv_offload/cpu/manager.py``). That call stores
  the blocks not yet in the tier, evicting what it must, or returns ``None``, changing nothing, when fewer blocks
  than it needs are evictable: the offered ones are protected, and a block stored or loaded this step is pinned
  (a store is pending, ``ref_cnt -1``, until the worker reports it; a load holds ``ref_cnt > 0``). A block another
  request stored this step is not ready yet: it is neither stored again nor recorded as used. The refused
  request's index does not move, so it offers the same blocks again in its next step. Re-admission restarts the
  index at 0 (``get_num_new_matched_tokens``), or after the loaded blocks when it loads
  (``update_state_after_alloc``, the default chunk-level policy).
- **What is evicted: the oldest request's tail first.** ``LRUCachePolicy`` (``vllm/v1/kv_offload/cpu/policies/
  lru.py``) ranks blocks; the smallest rank is evicted first. A request gets a rank the first time it offers or
  loads blocks (``_get_request_rank``, kept across preemptions); a block it stores is ranked
  ``(request rank, -position)`` (``insert``), and one it first loads or offers is raised to that rank
  (``on_request_access``), so among one request's blocks the tail goes first. When a request finishes, every
  block it stored, loaded or offered gets a fresh rank, tail first, head last: the head is the most recently used
  (``on_request_finished``, called from ``_build_connector_meta`` in the next step, after that step's stores).
- **Lookups:** ``get_num_new_matched_tokens`` walks the tier from the end of the device hit to the first miss
  (``_maximal_prefix_lookup``); a lookup ranks nothing. Blocks found are loaded into freshly allocated device blocks.

The store, load, finish and eviction rules are checked against vLLM 0.33.0's own ``CPUOffloadingManager`` on random
scripts (``oracle/tier.py``, run by ``tests/engine/kv/test_offload_tier.py``); the connector half above (what a
request offers when) is not, as oracle/README.md says.

On a ``BlockPool`` whose free queue holds the empty blocks first, then the stored ones in eviction order (the
grid's "eviction order", 0 = evicted next among them)::

    offer(request, ...)   its full blocks within the tokens it may offload, from its index, to store():
    store(request, blocks)  the ones the tier lacks go to empty blocks, then over the lowest-ranked blocks
                            neither pinned nor offered; all of them or none (the index stays: offered again)
    load(request, blocks)   pinned for the step, ranked with the request; its index moves past them
    restart(request)        its device blocks were freed: its index goes back to 0 (rank and history stay)
    finish(request)         its blocks re-ranked, head most recent, at the end of the next step
    end_step()              after the step's stores: pins released, nothing in the tier is held between steps

The KV manager caps what a request may offload at its prompt (``KVCacheManager.offload_stores``).

Where pykv differs: vLLM stores and loads asynchronously (a request with a load waits in
WAITING_FOR_REMOTE_KVS; a preemption flushes its pending stores); pykv copies synchronously, stores right after
the forward pass that computed the blocks and loads at admission, so every transfer is complete by the next step
(a block is pinned for that one step; in vLLM until the worker reports the copy) and each one's time is measured
in the step that made it. vLLM also offers a finished request's unstored blocks once more in the step after it
finishes; pykv does not (with prompt-only stores, only a request refused in the very step it finished is
affected). A lookup stops one token short of the request's end, as the device lookup does; 0.33 may load a
block-aligned prompt whole and then recompute its last token.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from itertools import islice
from typing import Sequence

from pykv.engine.kv.block_pool import BlockHash, BlockPool

Rank = tuple[int, int]  # (request rank or fresh rank, -position): the smallest is evicted first


@dataclass
class _RequestState:
    """One request's view of the tier, kept until it finishes, across preemptions (vLLM's ``ReqContext``)."""

    rank: int | None = None  # given at its first offer or load (LRUCachePolicy._get_request_rank)
    seen: dict[BlockHash, int] = field(default_factory=dict)  # blocks it stored, loaded or offered -> block index
    next_block: int = 0  # the first block it has not stored yet (vLLM's next_stored_chunk_idx)


class OffloadTier:
    def __init__(self, pool: BlockPool, block_size: int) -> None:
        self.block_size = block_size
        self.pool = pool  # the CPU blocks; free queue: empty ones, then stored ones in eviction order
        self.num_stored_blocks = 0  # blocks ever stored; changed by store() only
        self.num_failed_stores = 0  # batches refused whole (vLLM's vllm:kv_offload_allocation_failure)
        self._num_empty = pool.num_blocks  # blocks never stored to: handed out before anything is evicted
        self._ranks: dict[BlockHash, Rank] = {}  # every stored hash -> its rank
        self._heap: list[tuple[Rank, BlockHash]] = []  # evictable candidates, lazily invalidated (as vLLM's)
        self._next_rank = 0
        self._requests: dict[str, _RequestState] = {}
        self._held: list[int] = []  # tier blocks pinned until end_step: loaded or newly stored this step
        self._pending: set[BlockHash] = set()  # the hashes stored this step (vLLM: written, not ready yet)
        self._finished: list[str] = []  # requests finished since the last end_step, re-ranked at the next one
        self._reorder = False  # ranks changed since the free queue was last put in eviction order

    @property
    def num_blocks(self) -> int:
        return self.pool.num_blocks

    def hits(self, hashes: Sequence[BlockHash]) -> list[int]:
        """The tier blocks holding the leading run of ``hashes`` (stops at the first miss); ranks nothing."""
        found = []
        for block_hash in hashes:
            block_id = self.pool.lookup(block_hash)
            if block_id is None:
                break
            found.append(block_id)
        return found

    # ---- a request's blocks --------------------------------------------------------------------

    def load(self, request_id: str, first_block: int, hashes: Sequence[BlockHash]) -> list[int]:
        """Blocks ``first_block, first_block + 1, ...`` of the request (``hashes``, all in the tier) are being loaded:
        pinned until ``end_step``, ranked with the request (``prepare_load``); its stores resume after them."""
        ids = [self._block_of(h) for h in hashes]
        self.pool.touch(ids)
        self._held += ids
        state = self._state(request_id)
        self._access(state, list(enumerate(hashes, first_block)))
        state.next_block = first_block + len(hashes)
        return ids

    def offer(
        self, request_id: str, hashes: Sequence[BlockHash], table: Sequence[int], num_offloadable: int
    ) -> list[tuple[int, int]]:
        """Offer the request's full blocks within its first ``num_offloadable`` tokens from the first it has not stored
        yet (``_build_store_jobs``); on success its index moves past them, on a refusal it stays and the same blocks
        are offered next time. Returns the copies ``[(device block, tier block), ...]``."""
        state = self._state(request_id)
        num_full = min(num_offloadable // self.block_size, len(hashes), len(table))
        copies = self.store(request_id, [(i, hashes[i], table[i]) for i in range(state.next_block, num_full)])
        if copies is None:
            return []
        state.next_block = max(state.next_block, num_full)
        return copies

    def store(self, request_id: str, blocks: Sequence[tuple[int, BlockHash, int]]) -> list[tuple[int, int]] | None:
        """Store the request's ``blocks`` ``[(block index, hash, device block), ...]``, head to tail, all or nothing
        (``CPUOffloadingManager.prepare_store``): the ones the tier lacks go to empty tier blocks first, then to the
        lowest-ranked blocks neither pinned nor among ``blocks``. Returns the copies ``[(device block, tier block),
        ...]`` ([] when the tier held them all), or None, storing nothing, when too few blocks can be evicted."""
        if not blocks:
            return []
        state = self._state(request_id)
        # Recorded before the allocation can fail, as prepare_store does; a block another request stored this step
        # is still being written (vLLM: not ready) and is neither stored again nor recorded.
        self._access(state, [(i, h) for i, h, _ in blocks if h not in self._pending])
        new = [(i, h, gpu) for i, h, gpu in blocks if self.pool.lookup(h) is None]
        if not new:
            return []
        victims = self._victims(len(new) - self._num_empty, protected={h for _, h, _ in blocks})
        if victims is None:
            self.num_failed_stores += 1
            return None
        for block_hash in victims:
            del self._ranks[block_hash]
        cpu_ids = self.pool.allocate(len(new) - len(victims)) + self.pool.take([self._block_of(h) for h in victims])
        self._num_empty -= len(new) - len(victims)
        rank = self._request_rank(state)
        copies = []
        for (i, block_hash, gpu_block), cpu_block in zip(new, cpu_ids):
            self.pool.cache_block(cpu_block, block_hash)
            block = self.pool.blocks[cpu_block]
            block.num_tokens_filled, block.computed_by = self.block_size, request_id
            self._ranks[block_hash] = (rank, -(i + 1))
            self._pending.add(block_hash)
            copies.append((gpu_block, cpu_block))
        self._held += cpu_ids
        self.num_stored_blocks += len(copies)
        self._reorder = True
        return copies

    def restart(self, request_id: str) -> None:
        """The request's device blocks were freed: re-admitted, it offers its blocks from the first again (vLLM's
        ``get_num_new_matched_tokens`` resets ``next_stored_chunk_idx``); its rank and what it has seen stay."""
        if request_id in self._requests:
            self._requests[request_id].next_block = 0

    def finish(self, request_id: str) -> None:
        """The request is done: its blocks are re-ranked at the end of the next step (``on_request_finished``)."""
        if request_id in self._requests:
            self._finished.append(request_id)

    def end_step(self) -> None:
        """After the step's stores: re-rank the requests finished before them (tail first, head most recent), release
        the step's pins, and put the free queue in eviction order."""
        for request_id in self._finished:
            state = self._requests.pop(request_id, None)
            if state is None:
                continue
            for block_hash in sorted(state.seen, key=state.seen.__getitem__, reverse=True):
                if block_hash in self._ranks:
                    self._next_rank += 1
                    self._set_rank(block_hash, (self._next_rank, 0))
        self._finished = []
        held, self._held = self._held, []
        self._pending.clear()
        self.pool.free(held)
        for block_id in held:
            block = self.pool.blocks[block_id]
            if block.ref_cnt == 0:
                assert block.block_hash is not None
                heapq.heappush(self._heap, (self._ranks[block.block_hash], block.block_hash))
        if held:
            self._reorder = True
        if self._reorder:  # the stored blocks sit behind the empty ones: sort just them
            stored = list(islice(reversed(self.pool.free_queue), len(self.pool.free_queue) - self._num_empty))
            self.pool.requeue(sorted(stored, key=self._rank_of_block))
            self._reorder = False
        if len(self._heap) > max(64, 2 * len(self._ranks)):
            self._heap = [(rank, h) for h, rank in self._ranks.items() if self._evictable(h)]
            heapq.heapify(self._heap)

    # ---- ranks -------------------------------------------------------------------------------

    def _state(self, request_id: str) -> _RequestState:
        return self._requests.setdefault(request_id, _RequestState())

    def _request_rank(self, state: _RequestState) -> int:
        if state.rank is None:
            self._next_rank += 1
            state.rank = self._next_rank
        return state.rank

    def _access(self, state: _RequestState, blocks: Sequence[tuple[int, BlockHash]]) -> None:
        """``on_request_access``: blocks new to the request that the tier holds rise to its rank, tail first."""
        new = [(i, h) for i, h in blocks if h not in state.seen]
        if not new:
            return
        rank = self._request_rank(state)
        for i, block_hash in new:
            state.seen[block_hash] = i
            if block_hash in self._ranks and self._ranks[block_hash] < (rank, -(i + 1)):
                self._set_rank(block_hash, (rank, -(i + 1)))

    def _set_rank(self, block_hash: BlockHash, rank: Rank) -> None:
        self._ranks[block_hash] = rank
        self._reorder = True
        if self._evictable(block_hash):
            heapq.heappush(self._heap, (rank, block_hash))

    def _rank_of_block(self, block_id: int) -> Rank:
        block_hash = self.pool.blocks[block_id].block_hash
        assert block_hash is not None
        return self._ranks[block_hash]

    def _block_of(self, block_hash: BlockHash) -> int:
        block_id = self.pool.lookup(block_hash)
        assert block_id is not None, "the block is not in the tier"
        return block_id

    def _evictable(self, block_hash: BlockHash) -> bool:
        block_id = self.pool.lookup(block_hash)
        return block_id is not None and self.pool.blocks[block_id].ref_cnt == 0

    def _victims(self, n: int, protected: set[BlockHash]) -> list[BlockHash] | None:
        """The ``n`` lowest-ranked blocks neither pinned nor ``protected`` (``LRUCachePolicy.evict``), or None, changing
        nothing, if there are fewer."""
        selected: dict[BlockHash, Rank] = {}
        deferred = []
        while self._heap and len(selected) < n:
            rank, block_hash = heapq.heappop(self._heap)
            if self._ranks.get(block_hash) != rank or not self._evictable(block_hash) or block_hash in selected:
                continue  # stale: re-ranked, pinned or evicted since, or a duplicate entry
            if block_hash in protected:
                deferred.append((rank, block_hash))
            else:
                selected[block_hash] = rank
        refused = len(selected) < n
        for entry in deferred + ([(r, h) for h, r in selected.items()] if refused else []):
            heapq.heappush(self._heap, entry)
        return None if refused else list(selected)

    def check_invariants(self) -> None:
        self.pool.check_invariants()
        assert not self._held and all(b.ref_cnt == 0 for b in self.pool.blocks), "a tier block is pinned between steps"
        stored = {b.block_hash for b in self.pool.blocks if b.block_hash is not None}
        assert stored == self._ranks.keys(), "a stored block without a rank, or a rank without a block"
        assert self._num_empty == self.pool.num_blocks - len(stored), "the empty count drifted"
        order = [self.pool.blocks[b].block_hash for b in self.pool.free_queue]
        assert order[: self._num_empty] == [None] * self._num_empty, "an empty block behind a stored one"
        ranks = [self._ranks[h] for h in order[self._num_empty :] if h is not None]
        assert ranks == sorted(ranks), "the free queue is not in eviction order"
