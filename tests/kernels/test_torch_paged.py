"""pykv_kernels.torch_paged (the engine's torch backend) against the references, and its batch invariance: a row's
output is bitwise the same whatever else runs in the step, however its prompt is chunked, decode or prefill."""

from __future__ import annotations

import random
import threading

import pytest
import torch

from pykv_kernels import reference, torch_paged
from pykv_kernels.testing import make_paged_case

TOL = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
TILE = torch_paged.KEY_TILE


def check(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape and not got.isnan().any()
    tol = TOL[want.dtype]
    torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)


@pytest.mark.parametrize(
    "group, block_size, dtype",
    [
        (1, 16, torch.float32),
        (2, 1, torch.float32),
        (4, 16, torch.float32),
        (4, 15, torch.float32),
        (4, 17, torch.bfloat16),
        (2, 5, torch.float16),
    ],
)
def test_decode_and_mixed_prefill_match_the_references(group, block_size, dtype):
    """Random permuted tables, NaN beyond every seq_len, lengths on both sides of KEY_TILE boundaries."""
    rng = random.Random(block_size * group)
    seq_lens = [1, block_size, TILE, TILE + 1, 2 * TILE - 1] + [rng.randint(1, 300) for _ in range(4)]
    c = make_paged_case(2 * group, 2, 32, block_size, seq_lens=seq_lens, decode=True, dtype=dtype, seed=group)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
    check(torch_paged.paged_decode_attention(*args), reference.paged_decode_attention(*args))
    c.seq_lens.sub_(1).clamp_(min=1)  # changed in place: a plan made for the old lengths must not be reused
    check(torch_paged.paged_decode_attention(*args), reference.paged_decode_attention(*args))
    query_lens = [rng.randint(1, n) if i % 3 else 1 for i, n in enumerate(seq_lens)]  # prefill chunks and decodes
    c = make_paged_case(2 * group, 2, 32, block_size, seq_lens=seq_lens, query_lens=query_lens, dtype=dtype, seed=3)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    check(torch_paged.paged_prefill_attention(*args), reference.paged_prefill_attention(*args))


def test_inference_mode_tensors_and_other_threads_get_their_own_plans():
    """Inference tensors keep no version counter (no plan cache for them); a plan never crosses threads."""
    with torch.inference_mode():
        c = make_paged_case(2, 2, 32, 16, seq_lens=[5, 40, 130], decode=True, seed=7)
        args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
        check(torch_paged.paged_decode_attention(*args), reference.paged_decode_attention(*args))
    c = make_paged_case(2, 2, 32, 16, seq_lens=[5, 40, 130], decode=True, seed=7)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
    check(torch_paged.paged_decode_attention(*args), reference.paged_decode_attention(*args))  # planned here
    d = make_paged_case(2, 2, 32, 16, seq_lens=[9, 200], decode=True, seed=8)
    other = (d.query, d.k_cache, d.v_cache, d.block_tables, d.seq_lens, d.scale)
    thread = threading.Thread(target=torch_paged.paged_decode_attention, args=other)  # plans for its own tensors
    thread.start()
    thread.join()
    assert torch_paged._last_plan.entry[0][0] is c.block_tables  # this thread's plan was not replaced


NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK = 8, 2, 32, 4


def paged(requests: list[tuple[torch.Tensor, torch.Tensor]], rng: random.Random):
    """A NaN cache holding each request's (K, V) rows in randomly handed-out blocks; tables padded with 0."""
    counts = [-(-len(k) // BLOCK) for k, _ in requests]
    order = list(range(sum(counts) + 2))
    rng.shuffle(order)
    shape = (len(order), BLOCK, NUM_KV_HEADS, HEAD_DIM)
    k_cache, v_cache = torch.full(shape, float("nan")), torch.full(shape, float("nan"))
    tables = torch.zeros(len(requests), max(counts) + 1, dtype=torch.int32)
    for i, ((k, v), nb) in enumerate(zip(requests, counts)):
        tables[i, :nb] = torch.tensor([order.pop() for _ in range(nb)])
        slots = tables[i].long()[torch.arange(len(k)) // BLOCK] * BLOCK + torch.arange(len(k)) % BLOCK
        k_cache.view(-1, NUM_KV_HEADS, HEAD_DIM)[slots], v_cache.view(-1, NUM_KV_HEADS, HEAD_DIM)[slots] = k, v
    return k_cache, v_cache, tables


def step(requests, chunks, rng):
    """One engine step: chunks[i] = (first position, rows) of request i, whose cache holds its keys up to the
    chunk's end (NaN beyond). Returns each request's output rows."""
    ends = [pos + n for pos, n in chunks]
    k_cache, v_cache, tables = paged([(k[:end], v[:end]) for (k, v, _), end in zip(requests, ends)], rng)
    query = torch.cat([q[pos:end] for (_, _, q), (pos, _), end in zip(requests, chunks, ends)])
    starts = torch.tensor([0] + [n for _, n in chunks]).cumsum(0).int()
    scale = HEAD_DIM**-0.5
    if all(n == 1 for _, n in chunks):
        out = torch_paged.paged_decode_attention(query, k_cache, v_cache, tables, torch.tensor(ends).int(), scale)
    else:
        out = torch_paged.paged_prefill_attention(
            query, k_cache, v_cache, tables, torch.tensor(ends).int(), starts, scale
        )
    return [out[starts[i] : starts[i + 1]] for i in range(len(chunks))]


def request(n: int, gen: torch.Generator):
    return tuple(torch.randn(n, h, HEAD_DIM, generator=gen) for h in (NUM_KV_HEADS, NUM_KV_HEADS, NUM_HEADS))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_requests_rows_are_bitwise_the_same_in_any_batch_and_any_chunking(threads):
    """The engine's first rule (greedy tokens never depend on batch composition, chunking or preemption) needs
    this: bitwise, not close. The bucketed SDPA this file replaced failed it (padding followed the batch)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        rng, gen = random.Random(threads), torch.Generator().manual_seed(threads)
        for n in (3, TILE + 5, 2 * TILE + 37):
            target = request(n, gen)
            solo = step([target], [(0, n)], rng)[0]  # the whole prompt in one prefill chunk, alone
            assert not solo.isnan().any()
            for size in (1, 2, 7, TILE, n):  # chunked, beside other requests' prefills and decodes
                starts = list(range(0, n, size))
                for pos in sorted(rng.sample(starts, min(len(starts), 8))):  # a sample keeps the test quick
                    rows = min(size, n - pos)
                    others = [request(rng.randint(1, 3 * TILE), gen) for _ in range(rng.randint(0, 5))]
                    their = [(rng.randrange(len(k)), 1) if rng.random() < 0.7 else (0, len(k)) for k, _, _ in others]
                    at = rng.randint(0, len(others))
                    outs = step(others[:at] + [target] + others[at:], their[:at] + [(pos, rows)] + their[at:], rng)
                    assert torch.equal(outs[at], solo[pos : pos + rows]), (n, size, pos, len(others))
    finally:
        torch.set_num_threads(before)
