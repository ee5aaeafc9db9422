import pytest

from pykv.engine.kv.block_pool import BlockPool


def test_allocate_takes_from_front_and_free_appends_to_back():
    pool = BlockPool(4)
    a = pool.allocate(2)
    assert a == [0, 1]
    pool.free([1, 0])
    assert list(pool.free_queue) == [2, 3, 1, 0]
    assert pool.allocate(1) == [2]
    pool.check_invariants()


def test_freed_cached_block_keeps_hash_until_evicted_tail_first():
    pool = BlockPool(3)
    blocks = pool.allocate(3)
    for i, b in enumerate(blocks):
        pool.cache_block(b, 100 + i)
    pool.free(reversed(blocks))  # tail first: the head of the prefix is evicted last
    assert list(pool.free_queue) == [2, 1, 0]
    assert pool.lookup(100) == 0 and pool.lookup(102) == 2
    assert pool.allocate(1) == [2]  # evicts the tail block
    assert pool.lookup(102) is None and pool.lookup(100) == 0
    assert pool.num_evictions == 1
    pool.check_invariants()


def test_touch_revives_a_free_cached_block():
    pool = BlockPool(2)
    (b,) = pool.allocate(1)
    pool.cache_block(b, 7)
    pool.free([b])
    pool.touch([pool.lookup(7)])
    assert pool.blocks[b].ref_cnt == 1 and b not in pool.free_queue
    pool.touch([b])
    assert pool.blocks[b].ref_cnt == 2
    pool.free([b])
    assert pool.blocks[b].ref_cnt == 1
    pool.check_invariants()


def test_over_allocation_and_double_free_are_caught():
    pool = BlockPool(1)
    with pytest.raises(RuntimeError):
        pool.allocate(2)
    (b,) = pool.allocate(1)
    pool.free([b])
    with pytest.raises(AssertionError):
        pool.free([b])


def test_invariant_check_detects_a_corrupt_pool():
    pool = BlockPool(2)
    pool.allocate(1)
    pool.blocks[0].ref_cnt = 0  # corrupt: ref 0 but not in the free queue
    with pytest.raises(AssertionError):
        pool.check_invariants()


def test_the_null_block_is_kept_back():
    """vLLM V1 (0.10.2 and 0.33.0 v1/core/block_pool.py BlockPool.__init__) keeps block 0 back: N blocks hand
    out N-1, and usage is over those (BlockPool.get_usage)."""
    pool = BlockPool(4, null_block=True)
    assert pool.null_block == 0 and pool.num_usable_blocks == 3 and pool.num_free_blocks() == 3
    assert pool.allocate(3) == [1, 2, 3] and pool.usage() == 1.0
    with pytest.raises(RuntimeError):
        pool.allocate(1)
    pool.free([3, 2, 1])
    assert 0 not in pool.free_queue and pool.usage() == 0.0
    pool.check_tables({})
    pool.blocks[0].ref_cnt = 1  # corrupt: the null block handed out
    with pytest.raises(AssertionError):
        pool.check_invariants()


def test_unhashed_blocks_are_freed_to_the_front():
    """vLLM 0.33.0 BlockPool.free_blocks: a freed block without a hash goes to the front of the free queue (in the
    order freed), a hashed one to the back; 0.10.2 (the default here) appends both."""
    for first, expected in ((True, [3, 1, 5, 2]), (False, [5, 3, 2, 1])):
        pool = BlockPool(6, null_block=True, free_unhashed_first=first)
        blocks = pool.allocate(4)  # 1..4; 5 stays free
        pool.cache_block(blocks[1], 11)  # block 2 is hashed
        pool.free([3, 2, 1])  # tail first: 3 and 1 unhashed, 2 hashed
        assert list(pool.free_queue) == expected, first
        pool.check_invariants()
