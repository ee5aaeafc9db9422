"""V1's CPU offloading tier (vllm_profile v0.33, ``num_offload_blocks`` / ``kv_offloading_size``): that only full
prompt blocks are stored, when, all or nothing per request; what is loaded at (re-)admission; the eviction order
(the oldest request's tail first); the metrics; bit-identical round trips; and the tier's eviction rule against vLLM
0.33.0's own ``CPUOffloadingManager`` on random scripts (oracle/tier.py).

Sources: vLLM 0.33.0 ``vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py``
(``_calc_num_offloadable_tokens``: prompt tokens only, ``OffloadingSpec.offload_prompt_only`` defaulting to True in
``vllm/v1/kv_offload/base.py``; ``get_num_new_matched_tokens``: lookup after the local hit; ``_build_store_jobs``:
one batch per request, offered again while refused), ``vllm/v1/kv_offload/cpu/manager.py``
(``CPUOffloadingManager.prepare_store``: all or nothing, offered and pinned blocks protected),
``vllm/v1/kv_offload/cpu/policies/lru.py`` (``LRUCachePolicy``: ranks ``(request rank, -position)``, fresh ranks
at finish), ``vllm/v1/core/sched/scheduler.py`` (``connector_prefix_cache_stats.record``: queries = tokens past
the local hit, hits = tokens loaded, preempted requests apart) and the metric names in ``offloading/metrics.py``
and ``vllm/v1/metrics/loggers.py``.
"""

from __future__ import annotations

import os

import pytest
import torch
from rules import assert_drained, step_checked

from oracle import build_venvs
from oracle import tier as tier_oracle
from pykv import EngineConfig, SamplingParams
from pykv.border.request import Request
from pykv.engine.kv.block_pool import BlockPool
from pykv.engine.kv.kv_cache_manager import hash_block_tokens
from pykv.engine.kv.offload_tier import OffloadTier


def eviction_order(tier: OffloadTier) -> list:
    """The stored hashes in the order they would be evicted (the free queue behind the empty blocks)."""
    return [tier.pool.blocks[b].block_hash for b in tier.pool.free_queue if tier.pool.blocks[b].block_hash is not None]


def test_a_store_fills_empty_blocks_then_evicts_the_oldest_requests_tail():
    tier = OffloadTier(BlockPool(4), block_size=4)
    assert tier.store("a", [(0, 10, 0), (1, 11, 1), (2, 12, 2)]) == [(0, 0), (1, 1), (2, 2)]
    tier.end_step()
    assert eviction_order(tier) == [12, 11, 10]  # within a request, the tail goes first
    assert tier.store("b", [(0, 20, 5), (1, 21, 6)]) == [(5, 3), (6, 2)]  # the empty block, then a's tail
    tier.end_step()
    assert eviction_order(tier) == [11, 10, 21, 20]  # a ranks before b: all of a goes before any of b
    assert tier.pool.num_evictions == 1 and tier.num_stored_blocks == 5
    assert tier.hits([10, 11, 12]) == [0, 1] and eviction_order(tier) == [11, 10, 21, 20]  # a lookup ranks nothing
    tier.check_invariants()


def test_a_batch_that_does_not_fit_stores_nothing_and_is_offered_again():
    tier = OffloadTier(BlockPool(3), block_size=4)
    assert tier.store("a", [(i, 10 + i, i) for i in range(4)]) is None  # 4 blocks for 3: none kept, not 3 of them
    assert tier.pool.cached == {} and tier.num_failed_stores == 1
    assert tier.store("a", [(0, 10, 0), (1, 11, 1)]) is not None
    # Same step: b needs 2 blocks, there is 1 empty one, and a's are pinned (still being written): refused.
    assert tier.store("b", [(0, 20, 5), (1, 21, 6)]) is None and tier.num_failed_stores == 2
    tier.end_step()
    assert tier.store("b", [(0, 20, 5), (1, 21, 6)]) is not None  # next step: the empty block, then a's tail
    tier.end_step()
    assert set(tier.pool.cached) == {10, 20, 21} and eviction_order(tier) == [10, 21, 20]
    # A block already stored that the batch offers again is protected, and rises to the offering request's rank:
    # c offers a's 10 and a new 30; a's 10 would go next, but b's tail 21 is evicted instead.
    assert tier.store("c", [(0, 10, 7), (1, 30, 8)]) == [(8, tier.pool.lookup(30))]
    tier.end_step()
    assert set(tier.pool.cached) == {10, 20, 30} and eviction_order(tier) == [20, 30, 10]
    tier.check_invariants()


def test_loaded_blocks_are_pinned_for_the_step_and_ranked_with_the_request():
    tier = OffloadTier(BlockPool(3), block_size=4)
    tier.store("a", [(0, 10, 0), (1, 11, 1)])
    tier.store("b", [(0, 20, 2)])
    tier.end_step()
    assert eviction_order(tier) == [11, 10, 20]
    assert tier.load("c", 0, [10, 11]) == [0, 1]  # c loads a's blocks: pinned, and now c's (newer than b)
    assert tier.store("d", [(0, 40, 3)]) is not None  # a's blocks are pinned: b's 20 is the only one to evict
    tier.end_step()
    assert set(tier.pool.cached) == {10, 11, 40} and eviction_order(tier) == [11, 10, 40]
    tier.check_invariants()


def test_a_finished_requests_blocks_become_the_most_recent_head_last_after_the_next_steps_stores():
    tier = OffloadTier(BlockPool(4), block_size=4)
    tier.store("a", [(0, 10, 0), (1, 11, 1)])
    tier.store("b", [(0, 20, 2), (1, 21, 3)])
    tier.end_step()
    tier.finish("a")
    assert eviction_order(tier) == [11, 10, 21, 20]  # nothing changes before the next step's stores
    tier.store("c", [(0, 30, 4)])  # those still see a's old ranks: a's tail goes
    tier.end_step()  # then a's surviving blocks get fresh ranks, its head the freshest
    assert set(tier.pool.cached) == {10, 20, 21, 30} and eviction_order(tier) == [21, 20, 30, 10]
    tier.check_invariants()


@pytest.mark.skipif(
    not build_venvs.is_ready(tier_oracle.RELEASE) and os.environ.get("PYKV_ORACLE_REQUIRED") != "1",
    reason="the oracle's vLLM 0.33.0 venv is missing: run python oracle/build_venvs.py",
)
def test_the_tier_evicts_and_refuses_exactly_as_vllm_0_33s_cpu_offloading_manager():
    """Random scripts of stores, loads, finishes and steps through pykv's tier and vLLM 0.33.0's own manager (LRU):
    every store's outcome (what it stored, or that it was refused) and what the tier holds after each step agree."""
    scripts = [tier_oracle.random_script(seed) for seed in range(200)]
    theirs = tier_oracle.run_vllm(scripts)
    refused = 0
    for script, vllm_results in zip(scripts, theirs):
        ours = tier_oracle.run_pykv(script)
        assert tier_oracle.first_divergence(script, ours, vllm_results) is None
        refused += sum(r is None for op, r in zip(script["ops"], ours) if op[0] == "store")
    assert refused > 100  # the scripts do exercise refusals (and evictions: the tiers hold 2-9 blocks)


def prompt_hashes(prompt: list[int], block_size: int = 4) -> list[int]:
    hashes: list[int] = []
    for i in range(len(prompt) // block_size):
        hashes.append(hash_block_tokens(hashes[-1] if hashes else None, prompt[i * block_size : (i + 1) * block_size]))
    return hashes


def offload_engine(make_engine, **overrides):
    config = (
        dict(vllm_profile="v0.33", block_size=4, num_gpu_blocks=12, num_offload_blocks=32, max_num_batched_tokens=64)
        | overrides
    )
    return make_engine(**config)


def test_only_full_prompt_blocks_are_stored_after_the_step_that_computed_them(make_engine):
    engine = offload_engine(make_engine)
    engine.add_request(list(range(1, 11)), SamplingParams(max_tokens=8, ignore_eos=True), "a")  # 10 tokens
    report = step_checked(engine)  # prefill: tokens 0-9 -> blocks 0 and 1 full, block 2 partial
    (store,) = report.offload
    assert (store.direction, store.num_blocks, store.num_bytes) == ("store", 2, 2 * engine.bytes_per_block)
    assert store.modelled_pcie_s > 0 and store.device == "cpu"
    # Block 2 fills at position 11, blocks 3 and 4 later: they hold output (block 2 prompt tokens 8-9 too), and
    # 0.33 stores prompt tokens only. Nothing more is ever stored.
    while engine.has_unfinished_requests():
        assert step_checked(engine).offload == []
    assert len(engine.kv.cpu_pool.cached) == 2 and engine.kv.offload.num_stored_blocks == 2
    engine.add_request(list(range(1, 13)), SamplingParams(max_tokens=4, ignore_eos=True), "b")  # 12 tokens
    load, store = step_checked(engine).offload
    assert (load.direction, load.num_blocks) == ("load", 2)  # blocks 0 and 1 are a's (the same tokens) ...
    assert (store.direction, store.num_blocks) == ("store", 1)  # ... so only block 2 is new
    m = engine.metrics.as_dict()
    assert m["vllm:kv_offload_store_bytes_total"] == 3 * engine.bytes_per_block
    assert m["vllm:kv_offload_store_time_total"] > 0
    assert m["vllm:kv_offload_allocation_failure_total"] == 0


def test_a_prompt_larger_than_the_tier_is_never_stored_and_each_step_counts_a_failure(make_engine):
    engine = offload_engine(make_engine, num_offload_blocks=2)
    engine.add_request(list(range(1, 14)), SamplingParams(max_tokens=3, ignore_eos=True), "a")  # 3 full prompt blocks
    steps = 0
    while engine.has_unfinished_requests():
        assert step_checked(engine).offload == []
        steps += 1
    assert steps == 3 and engine.kv.cpu_pool.cached == {}  # not 2 of the 3 blocks: none
    assert engine.metrics.as_dict()["vllm:kv_offload_allocation_failure_total"] == 3  # offered again every step


def test_a_batch_refused_behind_this_steps_stores_goes_in_next_step_over_the_older_requests_tail(make_engine):
    """Two prompts of 2 full blocks in one step and a tier of 3: a is stored, b's 2 blocks find one empty block and
    a's being written, so b is refused; in the next step b offers them again, and a's tail makes room."""
    engine = offload_engine(make_engine, num_offload_blocks=3)
    a, b = list(range(1, 10)), list(range(20, 29))  # 9 tokens: 2 full blocks each
    engine.add_request(a, SamplingParams(max_tokens=4, ignore_eos=True), "a")
    engine.add_request(b, SamplingParams(max_tokens=4, ignore_eos=True), "b")
    (store,) = step_checked(engine).offload
    ha, hb = prompt_hashes(a), prompt_hashes(b)
    assert store.num_blocks == 2 and set(engine.kv.cpu_pool.cached) == set(ha)
    assert engine.metrics.as_dict()["vllm:kv_offload_allocation_failure_total"] == 1
    (store,) = step_checked(engine).offload
    assert store.num_blocks == 2 and set(engine.kv.cpu_pool.cached) == {ha[0], *hb}
    assert eviction_order(engine.kv.offload) == [ha[0], hb[1], hb[0]]
    assert engine.metrics.as_dict()["vllm:kv_offload_allocation_failure_total"] == 1


def test_a_recompute_victim_loads_its_prompt_blocks_back_and_recomputes_its_output(make_engine):
    engine = offload_engine(make_engine, num_gpu_blocks=10)
    for i in range(3):
        engine.add_request(list(range(1 + 7 * i, 15 + 7 * i)), SamplingParams(max_tokens=14, ignore_eos=True), f"r{i}")
    loaded = []
    while engine.has_unfinished_requests():
        report = step_checked(engine)
        for chunk in report.chunks:
            if chunk.num_loaded_tokens:
                loaded.append(chunk)
                request = engine.scheduler.requests.get(chunk.request_id)
                # Only the tail after the last loaded block is prefilled; the last token is always computed. The
                # tier holds full prompt blocks only: 3 of a 14-token prompt, never a block with output in it.
                assert chunk.start == chunk.num_cached_tokens + chunk.num_loaded_tokens
                assert chunk.num_loaded_tokens <= 12
                total = chunk.start + chunk.num_new_tokens
                assert request is None or total <= request.num_tokens
        if any(c.num_loaded_tokens for c in report.chunks):
            assert any(t.direction == "load" for t in report.offload)
    assert_drained(engine)
    assert loaded, "no victim came back through the tier"
    records = engine.preemptions()
    assert records and all(r.mode == "recompute" for r in records)
    assert sum(r.loaded_tokens for r in records) > 0
    assert sum(r.recomputed_tokens for r in records) < sum(r.num_tokens for r in records)
    for r in records:  # whatever output a victim had is recomputed, and the 2 prompt tokens of the partial block
        assert r.loaded_tokens <= 12 and r.recomputed_tokens >= r.num_tokens - 12, r
    assert any(r.num_tokens > 14 and r.recomputed_tokens > 2 for r in records), "no victim had output to recompute"
    m = engine.metrics.as_dict()
    assert m["pykv:offload_loaded_tokens_total"] == sum(c.num_loaded_tokens for c in loaded)
    # 0.33 leaves re-admissions after preemption out of vllm:external_prefix_cache_*: only new requests count.
    assert m["vllm:external_prefix_cache_hits_total"] == 0
    assert m["vllm:external_prefix_cache_queries_total"] == 3 * 14
    assert (
        m["vllm:kv_offload_load_bytes_total"] == sum(c.num_loaded_tokens for c in loaded) // 4 * engine.bytes_per_block
    )
    # Tokens equal a run with an ample pool and no tier.
    ample = make_engine(vllm_profile="v0.33", block_size=4, num_gpu_blocks=64)
    for i in range(3):
        ample.add_request(list(range(1 + 7 * i, 15 + 7 * i)), SamplingParams(max_tokens=14, ignore_eos=True), f"r{i}")
    while ample.has_unfinished_requests():
        ample.step()
    assert {k: o.output_token_ids for k, o in engine.outputs.items()} == {
        k: o.output_token_ids for k, o in ample.outputs.items()
    }


def test_a_new_request_hits_blocks_the_device_cache_lost(make_engine):
    """The tier outlives the device prefix cache: a prompt whose blocks were evicted from the device still loads."""
    engine = offload_engine(make_engine, num_gpu_blocks=7, enable_prefix_caching=True)  # 6 usable: V1 keeps block 0
    prompt = list(range(1, 14))  # 13 tokens: 3 full blocks of 4
    engine.generate([prompt], SamplingParams(max_tokens=2))
    engine.generate([list(range(100, 121))], SamplingParams(max_tokens=2))  # evicts the device copies
    assert engine.kv.get_computed_blocks(_probe(prompt)) == []  # gone from the device cache
    engine.add_request(prompt, SamplingParams(max_tokens=2), "again")
    report = step_checked(engine)
    (chunk,) = report.chunks
    assert (chunk.num_cached_tokens, chunk.num_loaded_tokens, chunk.start) == (0, 12, 12)
    m = engine.metrics.as_dict()
    assert m["vllm:external_prefix_cache_hits_total"] == 12


def _probe(prompt):
    return Request("probe", prompt, SamplingParams())


def test_store_and_load_round_trips_are_bit_identical(make_engine):
    engine = offload_engine(make_engine, num_gpu_blocks=7, enable_prefix_caching=True)  # 6 usable: V1 keeps block 0
    prompt = list(range(1, 14))
    engine.add_request(prompt, SamplingParams(max_tokens=1), "a")
    step_checked(engine)
    tier = engine.kv.cpu_pool
    hashes = engine.kv.block_hashes(_probe(prompt))[:3]
    gpu_blocks = [engine.kv.pool.lookup(h) for h in hashes]
    cpu_blocks = [tier.lookup(h) for h in hashes]
    before = engine.cache.gpu_cache[:, :, gpu_blocks].clone()
    assert torch.equal(engine.cache.cpu_cache[:, :, cpu_blocks], before)  # store: bit-identical
    while engine.has_unfinished_requests():
        step_checked(engine)
    engine.generate([list(range(100, 121))], SamplingParams(max_tokens=2))  # the device copies are overwritten
    engine.add_request(prompt, SamplingParams(max_tokens=1), "b")
    step_checked(engine)
    loaded_into = [engine.kv.pool.lookup(h) for h in hashes]
    assert torch.equal(engine.cache.gpu_cache[:, :, loaded_into], before)  # load: bit-identical


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(kv_offloading_size=-1.0), "kv_offloading_size"),
        (dict(kv_offloading_size=0.0), "kv_offloading_size"),
        (dict(num_offload_blocks=0), "num_offload_blocks"),
        (dict(num_offload_blocks=4, vllm_profile="v0.6"), "num_offload_blocks"),
        (dict(kv_offloading_size=1.0, vllm_profile="v0.10"), "kv_offloading_size"),
        (dict(kv_offloading_size=1.0, num_offload_blocks=4), "kv_offloading_size"),
    ],
)
def test_bad_offloading_sizes_are_one_line_errors(overrides, field):
    with pytest.raises(ValueError) as e:
        EngineConfig(**overrides)
    assert e.value.field == field and "\n" not in str(e.value)


def test_a_tier_under_one_block_is_refused(make_engine):
    with pytest.raises(ValueError, match="under one KV block") as e:
        make_engine(vllm_profile="v0.33", kv_offloading_size=1e-9)
    assert e.value.field == "kv_offloading_size"
