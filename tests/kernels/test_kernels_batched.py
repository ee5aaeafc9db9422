"""The CPU launch configuration (``pykv_kernels.paged_batched``: many work items per program, wide tiles, no
split-K) against the torch references, and its launch record against the block tables.

Caches are views into an engine-shaped pool with every unowned slot NaN and blocks handed out in a
random order (``pykv_kernels.testing``), so a read of a slot the kernel does not own shows up as NaN.
"""

from __future__ import annotations

import importlib.util
import random
import warnings

import pytest
import torch

if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

from pykv_kernels import reference  # noqa: E402
from pykv_kernels.launch_record import record_launches  # noqa: E402
from pykv_kernels.paged_batched import batched_attention  # noqa: E402
from pykv_kernels.paged_decode import paged_decode_attention  # noqa: E402
from pykv_kernels.paged_prefill import paged_prefill_attention  # noqa: E402
from pykv_kernels.store_kv import store_kv  # noqa: E402
from pykv_kernels.testing import make_paged_case  # noqa: E402
from pykv_kernels.triton_utils import interpreted  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreted(), reason="the CPU launch configuration runs under the interpreter")

TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def check(got: torch.Tensor, want: torch.Tensor) -> None:
    tol = TOL[want.dtype]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert not got.isnan().any(), "the kernel read a slot it should not have (NaN in the output)"
    torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)


def lengths(block_size: int, seed: int) -> list[int]:
    """Masked tails of every kind: 1, bs - 1, bs, bs + 1, and a random longer context."""
    return sorted({1, max(1, block_size - 1), block_size, block_size + 1, random.Random(seed).randint(2, 70)})


# (group, head_dim, block_size, dtype): GQA 1/2/4, block sizes 1, 16 and 16 +- 1, head dims 16/32/80.
CASES = [
    (1, 32, 16, torch.float32),
    (2, 32, 15, torch.float32),
    (4, 32, 17, torch.float32),
    (4, 16, 1, torch.float32),
    (2, 80, 16, torch.float16),
    (1, 32, 5, torch.bfloat16),
]


@pytest.mark.parametrize("group, head_dim, block_size, dtype", CASES)
def test_decode_matches_reference(group, head_dim, block_size, dtype):
    c = make_paged_case(
        2 * group,
        2,
        head_dim,
        block_size,
        seq_lens=lengths(block_size, group),
        decode=True,
        dtype=dtype,
        seed=block_size,
    )
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
    check(paged_decode_attention(*args), reference.paged_decode_attention(*args))


@pytest.mark.parametrize("group, head_dim, block_size, dtype", CASES)
def test_prefill_with_decodes_matches_reference(group, head_dim, block_size, dtype):
    """A mixed step: chunks over cached prefixes (two launches: one-token rows, then chunks)."""
    seq_lens = lengths(block_size, group + 1)
    rng = random.Random(block_size)
    query_lens = [1 if i % 2 else rng.randint(1, n) for i, n in enumerate(seq_lens)]
    c = make_paged_case(
        2 * group, 2, head_dim, block_size, seq_lens=seq_lens, query_lens=query_lens, dtype=dtype, seed=group
    )
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    check(paged_prefill_attention(*args), reference.paged_prefill_attention(*args))


@pytest.mark.parametrize("block_q, block_n, block_b", [(1, 16, 1), (4, 16, 2), (8, 32, 4), (64, 16, 16)])
def test_forced_tiles_several_programs_and_key_tiles(block_q, block_n, block_b):
    """Several programs, several query tiles per chunk and several key tiles per context (online softmax)."""
    c = make_paged_case(8, 2, 32, 7, seq_lens=[1, 30, 45, 9], query_lens=[1, 30, 12, 1], seed=block_q)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    got = batched_attention(*args, block_q=block_q, block_n=block_n, block_b=block_b)
    check(got, reference.paged_prefill_attention(*args))


@pytest.mark.parametrize("group, head_dim, block_size", [(1, 32, 1), (2, 80, 15), (4, 32, 16), (4, 16, 17)])
@pytest.mark.parametrize("block_q", [1, 8])  # one-token rows (no causal mask in the kernel), then causal chunks
@pytest.mark.parametrize("block_n", [None, 16])  # one key tile covering every context, then the online-softmax loop
def test_one_tile_and_loop_paths_with_padding_items(group, head_dim, block_size, block_q, block_n):
    """Both softmax paths, decode rows and causal chunks, head_dim padded (80 -> 128) or not, and a grid whose last
    program is mostly padding items (5 requests x 2 KV heads over BLOCK_B 4 and 8): no NaN, no numpy warning (a
    padding item repeats a real one, so its softmax stays finite)."""
    seq_lens = lengths(block_size, group)[:4] + [3 * block_size + 2]
    query_lens = [1 if block_q == 1 else min(n, 1 + 5 * i) for i, n in enumerate(seq_lens)]
    c = make_paged_case(2 * group, 2, head_dim, block_size, seq_lens=seq_lens, query_lens=query_lens, seed=block_size)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    want = reference.paged_prefill_attention(*args)
    for block_b in (4, 8):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = batched_attention(*args, block_q=block_q, block_n=block_n, block_b=block_b)
        check(got, want)


@pytest.mark.parametrize("seed", range(4))
def test_recorded_block_order_is_the_block_table(seed):
    """What the kernel traced, item by item, is the request's block table walked from position 0, in order."""
    rng = random.Random(seed)
    block_size = rng.choice([1, 3, 16])
    seq_lens = [rng.randint(1, 60) for _ in range(rng.randint(1, 5))]
    query_lens = [rng.randint(1, n) if rng.random() < 0.5 else 1 for n in seq_lens]
    c = make_paged_case(4, 2, 16, block_size, seq_lens=seq_lens, query_lens=query_lens, seed=seed)
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    with record_launches() as launches:
        got = paged_prefill_attention(*args)
    check(got, reference.paged_prefill_attention(*args))
    items = [(launch, it) for launch in launches for p in launch.programs for it in p.items]
    assert all(launch.traced and launch.kernel == "paged_batched_kernel" for launch, _ in items)
    owned = sorted((it.seq, it.kv_head, it.query_rows) for _, it in items)
    starts = c.query_start_loc.tolist()
    assert sorted({(s, h) for s, h, _ in owned}) == [(s, h) for s in range(len(seq_lens)) for h in range(2)]
    for s in range(len(seq_lens)):  # every query row of every request owned exactly once per KV head
        rows = sorted(r for seq, h, (lo, hi) in owned if seq == s and h == 0 for r in range(lo, hi))
        assert rows == list(range(starts[s], starts[s + 1]))
    for _, it in items:
        table = c.block_tables[it.seq].tolist()
        assert list(it.blocks) == table[: -(-it.key_stop // block_size)]
        assert it.key_stop == it.query_positions[1] and it.causal_from == it.query_positions[0]
        assert it.tiles[0].start == 0 and it.tiles[-1].stop == it.key_stop


def test_store_with_heads_in_one_row_and_with_strided_heads():
    """The CPU store moves all heads of a token as one row of a (slot, row) view when memory allows (the
    engine's layout), else head by head with the GPU store kernel."""
    pool = torch.full((2, 2, 6, 4, 2, 16), float("nan"))
    key, value = torch.randn(9, 2, 16), torch.randn(9, 2, 16)
    slots = torch.randperm(24)[:9]
    want = pool.clone()
    reference.store_kv(key, value, want[1, 0], want[1, 1], slots)
    with record_launches() as launches:
        store_kv(key, value, pool[1, 0], pool[1, 1], slots)
    assert torch.equal(pool.nan_to_num(-7), want.nan_to_num(-7))
    (launch,) = launches
    assert launch.grid == (1, 1, 1) and launch.programs[0].items[0].kv_head is None
    assert set(launch.programs[0].items[0].blocks) == {int(s) // 4 for s in slots}

    wide = torch.randn(9, 2, 32)[:, :, :16]  # heads not back to back: one program per head
    pool2 = torch.full_like(pool, float("nan"))
    want2 = pool2.clone()
    reference.store_kv(wide, wide, want2[1, 0], want2[1, 1], slots)
    with record_launches() as launches:
        store_kv(wide, wide, pool2[1, 0], pool2[1, 1], slots)
    assert torch.equal(pool2.nan_to_num(-7), want2.nan_to_num(-7))
    assert launches[0].grid == (1, 2, 1)

    assert launch.kernel == "store_rows_kernel"  # the first case: (slot, row) view, the leanest store


def test_gpu_configuration_records_grid_splits_and_spare_tiles():
    """The GPU launchers (run here by the interpreter) record their grid, split-K ranges and spare prefill tiles;
    their blocks come from the tables they were given (``traced`` is False)."""
    from pykv_kernels.paged_decode import launch_decode
    from pykv_kernels.paged_prefill import launch_prefill

    c = make_paged_case(4, 2, 16, 5, seq_lens=[3, 21, 40], decode=True, seed=7)
    with record_launches() as launches:
        launch_decode(c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale, num_splits=3, block_n=16)
    decode, reduce = launches
    assert (decode.phase, decode.grid, decode.traced) == ("decode", (3, 2, 3), False) and reduce.phase == "reduce"
    for s, n in enumerate([3, 21, 40]):
        items = [it for p in decode.programs if p.program[0] == s and p.program[1] == 0 for it in p.items]
        assert items[0].key_start == 0 and items[-1].key_stop == n  # the splits cover the context, in order
        assert all(a.key_stop == b.key_start for a, b in zip(items, items[1:]))
        walked = [b for it in items for b in it.blocks]
        table = c.block_tables[s].tolist()[: -(-n // 5)]
        assert launch_record_runs(walked) == table

    c = make_paged_case(4, 2, 16, 5, seq_lens=[3, 40], query_lens=[3, 16], seed=8)  # 8-token tiles: 1 spare
    with record_launches() as launches:
        launch_prefill(c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    (prefill,) = launches
    owned = [it for p in prefill.programs for it in p.items]
    assert any(not p.items for p in prefill.programs), "the launcher's spare tiles own nothing"
    assert sorted({(it.seq, it.query_rows) for it in owned}) == [(0, (0, 3)), (1, (3, 11)), (1, (11, 19))]
    last = next(it for it in owned if it.query_rows == (11, 19))
    assert last.causal_from == 32 and last.key_stop == 40 and list(last.blocks) == c.block_tables[1].tolist()[:8]


def launch_record_runs(blocks: list[int]) -> list[int]:
    from pykv_kernels.launch_record import runs

    return list(runs(blocks))
