from pykv.border.request import Request, SamplingParams
from pykv.engine.kv.block_pool import BlockPool
from pykv.engine.kv.kv_cache_manager import KVCacheManager


def req(rid, tokens, max_tokens=4):
    return Request(rid, list(tokens), SamplingParams(max_tokens=max_tokens))


def admit(kv, r):
    hits = kv.get_computed_blocks(r)
    num_hit = len(hits) * kv.block_size
    assert kv.allocate_slots(r, r.num_tokens - num_hit, hits) is not None
    kv.record_lookup(r, hits)
    r.num_computed_tokens = r.num_tokens
    return num_hit


def test_block_table_grows_one_block_per_block_size_tokens():
    kv = KVCacheManager(BlockPool(8), block_size=4, enable_prefix_caching=False)
    r = req("a", range(5))
    assert kv.allocate_slots(r, 5).new_blocks == [0, 1]
    r.num_computed_tokens = 5
    r.output_token_ids = [1, 2, 3]  # tokens 5..7 fill block 1
    for _ in range(3):
        assert kv.allocate_slots(r, 1).new_blocks == []
        r.num_computed_tokens += 1
    r.output_token_ids.append(4)
    assert kv.allocate_slots(r, 1).new_blocks == [2]
    kv.check_invariants()


def test_prefix_hit_reuses_full_blocks_and_always_recomputes_last_token():
    kv = KVCacheManager(BlockPool(16), block_size=4, enable_prefix_caching=True)
    a = req("a", range(12))
    assert admit(kv, a) == 0
    b = req("b", list(range(12)))  # identical prompt: 3 full blocks, but the last token must be recomputed
    assert admit(kv, b) == 8
    assert kv.block_tables["b"][:2] == kv.block_tables["a"][:2]
    assert kv.block_tables["b"][2] != kv.block_tables["a"][2]
    assert kv.pool.blocks[kv.block_tables["a"][0]].ref_cnt == 2
    stats = kv.make_prefix_cache_stats()
    assert (stats.queries, stats.hits) == (24, 8) and kv.make_prefix_cache_stats().queries == 0
    kv.check_invariants()


def test_prefix_shorter_than_one_block_is_never_hit():
    kv = KVCacheManager(BlockPool(16), block_size=4, enable_prefix_caching=True)
    admit(kv, req("a", [1, 2, 3, 9, 9]))
    assert admit(kv, req("b", [1, 2, 3, 7, 7])) == 0


def test_hit_survives_free_until_evicted():
    kv = KVCacheManager(BlockPool(4), block_size=2, enable_prefix_caching=True)
    a = req("a", range(7))  # 4 blocks; 3 full
    admit(kv, a)
    kv.free(a)
    assert kv.pool.num_free_blocks() == 4
    assert admit(kv, req("b", range(7))) == 6
    kv.check_invariants()


def test_allocation_failure_changes_nothing():
    kv = KVCacheManager(BlockPool(2), block_size=2, enable_prefix_caching=False)
    assert kv.allocate_slots(req("a", range(5)), 5) is None
    assert kv.pool.num_free_blocks() == 2 and "a" not in kv.block_tables
    kv.check_invariants()
