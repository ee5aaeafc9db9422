"""V1's CPU offloading tier (vllm_profile v0.33, ``num_offload_blocks`` / ``kv_offloading_size``): what is stored
when, what is loaded at (re-)admission, the LRU eviction order, the metrics, and bit-identical round trips.

Sources: vLLM 0.33.0 ``vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py``
(``get_num_new_matched_tokens``: lookup after the local hit; ``_build_store_jobs``: full blocks once computed;
``_build_connector_meta``: a preempted request's pending stores are flushed), ``vllm/v1/kv_offload/cpu/policies/
lru.py`` (``LRUCachePolicy``), ``vllm/v1/core/sched/scheduler.py`` (``connector_prefix_cache_stats.record``:
queries = tokens past the local hit, hits = tokens loaded, preempted requests apart) and the metric names in
``offloading/metrics.py`` and ``vllm/v1/metrics/loggers.py``.
"""

from __future__ import annotations

import pytest
import torch
from rules import assert_drained, step_checked

from pykv import EngineConfig, SamplingParams
from pykv.border.request import Request
from pykv.engine.kv.block_pool import BlockPool
from pykv.engine.kv.offload_tier import OffloadTier


def test_tier_is_an_lru_of_full_blocks():
    tier = OffloadTier(BlockPool(3), block_size=4)
    assert tier.store([(11, 0, "a"), (12, 1, "a")]) == [(0, 0), (1, 1)]
    assert tier.store([(11, 5, "b")]) == []  # already stored: no copy
    tier.touch(tier.hits([11]))  # a load makes 11 the most recently used
    assert tier.store([(13, 2, "a"), (14, 3, "a")]) == [(2, 2), (3, 1)]  # 14 evicts 12, the least recently used
    assert tier.hits([11, 13, 14]) == [0, 2, 1]
    assert tier.hits([12, 13]) == []  # a run stops at its first miss
    assert tier.pool.num_evictions == 1
    # A batch larger than the tier keeps its last blocks (the earlier ones would be evicted at once).
    assert [cpu for _, cpu in tier.store([(20 + i, i, "c") for i in range(5)])] == [0, 2, 1]
    assert tier.hits([22, 23, 24]) == [0, 2, 1]
    tier.check_invariants()


def offload_engine(make_engine, **overrides):
    config = dict(vllm_profile="v0.33", block_size=4, num_gpu_blocks=12, num_offload_blocks=32,
                  max_num_batched_tokens=64) | overrides
    return make_engine(**config)


def test_full_blocks_are_stored_after_the_step_that_computed_them(make_engine):
    engine = offload_engine(make_engine)
    engine.add_request(list(range(1, 11)), SamplingParams(max_tokens=8, ignore_eos=True), "a")  # 10 tokens
    report = step_checked(engine)  # prefill: tokens 0-9 -> blocks 0 and 1 full, block 2 partial
    (store,) = report.offload
    assert (store.direction, store.num_blocks, store.num_bytes) == ("store", 2, 2 * engine.bytes_per_block)
    assert store.modelled_pcie_s > 0 and store.device == "cpu"
    assert step_checked(engine).offload == []  # decode: position 10 computed, block 2 not full yet (never stored)
    (store,) = step_checked(engine).offload  # position 11: block 2 becomes full -> stored after this step
    assert store.num_blocks == 1
    assert len(engine.kv.cpu_pool.cached) == 3
    m = engine.metrics.as_dict()
    assert m["vllm:kv_offload_store_bytes_total"] == 3 * engine.bytes_per_block
    assert m["vllm:kv_offload_store_time_total"] > 0


def test_a_recompute_victim_loads_its_blocks_back_and_recomputes_only_the_tail(make_engine):
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
                # Only the tail after the last loaded block is prefilled; the last token is always computed.
                assert chunk.start == chunk.num_cached_tokens + chunk.num_loaded_tokens
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
    m = engine.metrics.as_dict()
    assert m["pykv:offload_loaded_tokens_total"] == sum(c.num_loaded_tokens for c in loaded)
    # 0.33 leaves re-admissions after preemption out of vllm:external_prefix_cache_*: only new requests count.
    assert m["vllm:external_prefix_cache_hits_total"] == 0
    assert m["vllm:external_prefix_cache_queries_total"] == 3 * 14
    assert m["vllm:kv_offload_load_bytes_total"] == sum(c.num_loaded_tokens for c in loaded) // 4 * \
        engine.bytes_per_block
    # Tokens equal a run with an ample pool and no tier.
    ample = make_engine(vllm_profile="v0.33", block_size=4, num_gpu_blocks=64)
    for i in range(3):
        ample.add_request(list(range(1 + 7 * i, 15 + 7 * i)), SamplingParams(max_tokens=14, ignore_eos=True), f"r{i}")
    while ample.has_unfinished_requests():
        ample.step()
    assert {k: o.output_token_ids for k, o in engine.outputs.items()} == \
        {k: o.output_token_ids for k, o in ample.outputs.items()}


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


@pytest.mark.parametrize("overrides, field", [
    (dict(kv_offloading_size=-1.0), "kv_offloading_size"),
    (dict(kv_offloading_size=0.0), "kv_offloading_size"),
    (dict(num_offload_blocks=0), "num_offload_blocks"),
    (dict(num_offload_blocks=4, vllm_profile="v0.6"), "num_offload_blocks"),
    (dict(kv_offloading_size=1.0, vllm_profile="v0.10"), "kv_offloading_size"),
    (dict(kv_offloading_size=1.0, num_offload_blocks=4), "kv_offloading_size"),
])
def test_bad_offloading_sizes_are_one_line_errors(overrides, field):
    with pytest.raises(ValueError) as e:
        EngineConfig(**overrides)
    assert e.value.field == field and "\n" not in str(e.value)


def test_a_tier_under_one_block_is_refused(make_engine):
    with pytest.raises(ValueError, match="under one KV block") as e:
        make_engine(vllm_profile="v0.33", kv_offloading_size=1e-9)
    assert e.value.field == "kv_offloading_size"
