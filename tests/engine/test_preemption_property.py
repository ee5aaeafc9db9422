"""The central invariant: greedy tokens never depend on pool size, preemption, prefix caching,
chunking or batch composition.

It runs under every vLLM profile; the "pykv" Hypothesis profile's examples (tests/conftest.py: 200 by
default, ``PYKV_HYPOTHESIS_EXAMPLES=1000`` for a deeper run) are shared among them, a third each."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from rules import assert_drained, step_checked

from pykv import SamplingParams
from pykv.border.vllm_profiles import PROFILES, Engine
from pykv.engine.parallel_sampling import sequence_ids

PER_PROFILE = math.ceil(settings().max_examples / len(PROFILES))

_solo_cache: dict[tuple, list[int]] = {}


def solo_tokens(make_engine, prompt: list[int], max_tokens: int) -> list[int]:
    """The tokens a request produces alone in an ample pool (cached: the model never changes)."""
    key = (tuple(prompt), max_tokens)
    if key not in _solo_cache:
        engine = make_engine(num_gpu_blocks=512, block_size=16, max_num_batched_tokens=512)
        _solo_cache[key] = engine.generate([prompt], SamplingParams(max_tokens=max_tokens))[0].output_token_ids
    return _solo_cache[key]


shared_prefix = st.lists(st.integers(1, 319), min_size=0, max_size=48)
request = st.tuples(
    st.lists(st.integers(1, 319), min_size=1, max_size=200),  # own tokens
    st.integers(1, 64),  # max_tokens
    st.integers(0, 6),  # arrival step
    st.booleans(),  # starts with the shared prefix
    st.integers(0, 2),  # priority (read by preemption_victim="priority")
    st.sampled_from([1, 1, 1, 2, 3, 4]),  # n: parallel sampling, sequences forked on the first token
)


@pytest.mark.slow  # hundreds of random engines per profile
@pytest.mark.parametrize("vllm_profile", list(PROFILES))
@settings(max_examples=PER_PROFILE)
@given(
    prefix=shared_prefix,
    requests=st.lists(request, min_size=1, max_size=5),
    block_size=st.sampled_from([1, 2, 4, 8, 16, 32]),
    pool_slack=st.sampled_from([0.0, 0.0, 0.0, 0.05, 0.2, 1.0]),  # lean towards pools that preempt
    enable_prefix_caching=st.booleans(),
    enable_chunked_prefill=st.booleans(),
    budget=st.sampled_from([1, 7, 32, 2048]),
    max_num_seqs=st.integers(1, 6),
    preemption_mode=st.sampled_from(["recompute", "swap", "auto"]),
    cpu_slack=st.sampled_from([0.0, 0.3, 1.0, 2.0]),  # CPU pool size as a share of the device pool
    swap_fallback=st.sampled_from(["recompute", "abort"]),
    swap_copy=st.sampled_from(["batched", "per_block"]),
    preemption_victim=st.sampled_from(["last", "last", "priority", "lcf", "sglang"]),
    offload_slack=st.sampled_from([None, None, 0.1, 0.5, 2.0]),  # v0.33's CPU offloading tier, share of the pool
)
def test_tokens_identical_under_preemption(
    make_engine,
    vllm_profile,
    prefix,
    requests,
    block_size,
    pool_slack,
    enable_prefix_caching,
    enable_chunked_prefill,
    budget,
    max_num_seqs,
    preemption_mode,
    cpu_slack,
    swap_fallback,
    swap_copy,
    preemption_victim,
    offload_slack,
):
    workload = [
        ((prefix if shared else []) + own, max_tokens, arrival) for own, max_tokens, arrival, shared, _, _ in requests
    ]
    workload = [(p[:200], m, a) for p, m, a in workload]
    priorities = [priority for *_, priority, _ in requests]
    ns = [min(n, max_num_seqs) for *_, n in requests]
    largest = max(len(p) + m - 1 for p, m, _ in workload)  # KV slots: the last sampled token has none
    # max_model_len is fitted to the pool and counts every token (vLLM's check_stop): the pool holds len + m.
    # n sequences of one request must fit side by side (V0 swaps a group whole and brings it back whole).
    smallest_pool = max(n * math.ceil((len(p) + m) / block_size) for (p, m, _), n in zip(workload, ns))
    ample = sum(n * math.ceil((len(p) + m) / block_size) for (p, m, _), n in zip(workload, ns))
    num_blocks = smallest_pool + round(pool_slack * max(0, ample - smallest_pool))
    num_blocks += PROFILES[vllm_profile].null_block  # a V1 pool also holds its null block (block 0)
    p = PROFILES[vllm_profile]
    if p.engine is Engine.V0:  # 0.6.3's append check wants a free block per sequence even for a decode into a
        num_blocks += max(ns)  # partly filled one: a group holding a just-full pool livelocks (pykv's guard aborts)
    if p.chunked_prefill_always:
        enable_chunked_prefill = True  # 0.10 always chunks
    budget = max(budget, max_num_seqs)  # vLLM refuses a budget under max_num_seqs (one decode token each)
    if not enable_chunked_prefill:
        budget = max(budget, largest + 1)  # max_model_len (len + m) must fit one step (vLLM refuses to start)
    if enable_prefix_caching and enable_chunked_prefill and p.prefix_chunks_whole_blocks:
        budget = math.ceil(budget / block_size) * block_size  # V0 needs whole blocks per chunk then
    swap = (
        {
            "preemption_mode": preemption_mode,
            "num_cpu_blocks": int(cpu_slack * num_blocks),
            "swap_fallback": swap_fallback,
            "swap_copy": swap_copy,
        }
        if p.swaps
        else {}
    )
    offload = (
        {}
        if offload_slack is None or not p.has_kv_offloading
        else {"num_offload_blocks": max(1, round(offload_slack * num_blocks))}
    )
    engine = make_engine(
        vllm_profile=vllm_profile,
        block_size=block_size,
        num_gpu_blocks=num_blocks,
        max_num_batched_tokens=budget,
        max_num_seqs=max_num_seqs,
        enable_prefix_caching=enable_prefix_caching,
        enable_chunked_prefill=enable_chunked_prefill,
        preemption_victim=preemption_victim,
        **swap,
        **offload,
    )
    ids = {}
    orphaned = set()  # 0.10.2: a victim scheduled earlier in the step resumes past tokens whose KV was never computed
    pending = sorted(enumerate(workload), key=lambda x: x[1][2])
    while pending or engine.has_unfinished_requests():
        while pending and pending[0][1][2] <= engine.step_count:
            i, (prompt, max_tokens, _) = pending.pop(0)
            ids[i] = engine.add_request(prompt, SamplingParams(max_tokens=max_tokens, n=ns[i]), priority=priorities[i])
        report = step_checked(engine)
        orphaned |= {c.request_id for c in report.chunks if c.orphaned}
        for preemption in report.preempted:
            event(f"preempted by {preemption.mode}" + (" (swap fell back)" if preemption.fallback else ""))
        if any(c.num_cached_tokens for c in report.chunks):
            event("prefix-cache hit")
        if any(c.num_loaded_tokens for c in report.chunks):
            event("loaded from the offloading tier")
        if report.copy_on_write:
            event("copy on write")
        assert engine.step_count < 5000, "no progress"
    assert_drained(engine)
    for i, (prompt, max_tokens, _) in enumerate(workload):
        if ns[i] > 1:
            event("parallel sampling")
        for seq in sequence_ids(ids[i], ns[i]):  # greedy: every sequence of a request equals the solo run
            if seq not in engine.outputs:  # never forked: the request was aborted before its first token
                assert engine.outputs[ids[i]].finish_reason == "abort"
                continue
            if seq in orphaned or ids[i] in orphaned:  # 0.10.2's lost KV (fixed in 0.11.1): output may differ
                assert not p.victim_chunk_taken_back and engine.outputs[seq].finish_reason in ("stop", "length")
                event("0.10.2 resumed past an orphaned chunk")
                continue
            check_output(engine.outputs[seq], solo_tokens(make_engine, prompt, max_tokens), swap, swap_fallback, i)


def check_output(out, expected, swap, swap_fallback, i) -> None:
    if out.finish_reason == "abort":  # only a full CPU pool with swap_fallback="abort" may do this
        assert swap.get("preemption_mode") in ("swap", "auto") and swap_fallback == "abort"  # auto swaps groups
        assert "lack of CPU swap space" in out.message
        event("aborted for lack of swap space")
        assert out.output_token_ids == expected[: len(out.output_token_ids)], f"request {i} diverged before abort"
        return
    assert out.finish_reason in ("stop", "length")
    assert out.output_token_ids == expected, f"request {i} ({out.request_id}) diverged"
