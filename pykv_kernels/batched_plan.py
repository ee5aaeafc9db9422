"""The CPU launch configuration of paged attention: the work list of ``paged_batched`` and its tile sizes.

Items are (request, query tile of ``block_q`` tokens, KV head), request by request. One launch takes the
one-token rows (decodes), another the chunks (prefills); each gets the widest tiles that fit: the longest
context in one key tile (up to ``MAX_BLOCK_N``), then as many items per program as keep a program's
widest tile under ``MAX_TILE_ELEMENTS`` (the interpreter's cost is per operation and per program, the
elements nearly free)::

    items:    [s0 h0] [s0 h1] [s1 h0] [s1 h1] [s2 h0] ...        (s = request, h = KV head)
    programs: |<----- BLOCK_B items ----->|<----- BLOCK_B ...     grid = ceil(items / BLOCK_B)

Torch only: importing this never imports triton.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pykv_kernels import launch_record
from pykv_kernels.launch_utils import check_attention_inputs, next_pow2

MAX_TILE_ELEMENTS = 1 << 20  # a program's widest tile (items x rows x keys): 4 MB of fp32 per interpreted op
MAX_BLOCK_N = 512  # keys per tile; longer contexts loop
MAX_ROWS = 512  # query rows (tokens x GROUP) per item
MAX_ITEM_TILE = 1 << 17  # an item's score tile (rows x keys): tall items take narrower key tiles (and each
#                          program stops at its items' last visible key, so a chunk's causal upper part is skipped)
SMALL_CHUNK = 16  # chunks of 2..SMALL_CHUNK tokens get a launch of their own, apart from long chunks


@dataclass(frozen=True)
class WorkItem:
    """One request's query tile against one KV head."""

    seq: int  # row of block_tables
    kv_head: int
    row: int  # first query row in `query`
    length: int  # query tokens
    pos: int  # position of the first query token; keys 0 .. pos + length - 1 are visible

    @property
    def kv_end(self) -> int:
        return self.pos + self.length


@dataclass(frozen=True)
class BatchedPlan:
    """One launch: its work list, items per program and tile widths."""

    items: tuple[WorkItem, ...]
    group: int
    block_q: int  # query tokens per item
    block_b: int
    block_m: int
    block_n: int

    @property
    def grid(self) -> tuple[int]:
        return (-(-len(self.items) // self.block_b),)

    @property
    def kv_len_max(self) -> int:
        return max(item.kv_end for item in self.items)

    def program_items(self, program: int) -> tuple[WorkItem, ...]:
        return self.items[program * self.block_b : (program + 1) * self.block_b]


def work_items(
    seqs: list[int], query_start_loc: list[int], seq_lens: list[int], num_kv_heads: int, block_q: int
) -> tuple[WorkItem, ...]:
    """One item per (request in ``seqs``, query tile of ``block_q`` tokens, KV head), in that order."""
    items: list[WorkItem] = []
    for s in seqs:
        q_len = query_start_loc[s + 1] - query_start_loc[s]
        ctx_len = seq_lens[s] - q_len
        for t0 in range(0, q_len, block_q):
            n = min(block_q, q_len - t0)
            items.extend(WorkItem(s, h, query_start_loc[s] + t0, n, ctx_len + t0) for h in range(num_kv_heads))
    return tuple(items)


def plan_launch(
    items: tuple[WorkItem, ...],
    group: int,
    head_dim: int,
    block_q: int,
    block_n: int | None = None,
    block_b: int | None = None,
) -> BatchedPlan:
    """Widest tiles first: the whole longest context in one key tile (up to MAX_BLOCK_N), then as many
    items per program as keep a program's widest tile under MAX_TILE_ELEMENTS."""
    # No floor of 16 rows (a GPU's tl.dot would want one): the interpreter's tl.dot is a numpy matmul, where
    # padded rows cost in full; a decode item is GROUP rows, not 16.
    block_m = next_pow2(block_q * group)
    if block_n is None:  # the longest context in one tile, unless tall items make that tile too wide
        block_n = min(MAX_BLOCK_N, max(16, next_pow2(max(i.kv_end for i in items))), max(16, MAX_ITEM_TILE // block_m))
    widest = block_m * block_n + block_n * max(16, next_pow2(head_dim))
    fits = 1 << max(0, (MAX_TILE_ELEMENTS // widest).bit_length() - 1)  # a power of two (tl.arange)
    block_b = block_b or min(next_pow2(len(items)), fits)
    return BatchedPlan(items, group, block_q, block_b, block_m, block_n)


def row_tables(plan: BatchedPlan, query: torch.Tensor, out: torch.Tensor, table_stride: int, head_stride: int):
    """Per item (padded to the grid): offset of its block-table row and of its KV head in a cache row (int64, so
    the kernel casts nothing), visible keys; per row: query and output offsets, position. Padding rows read query
    row 0 and write the spare output row ``out[-1]``; padding items repeat the last item into that row (finite
    math: a padding item with no visible key would turn its softmax into NaN)."""
    n, padded, rows = len(plan.items), plan.grid[0] * plan.block_b, plan.block_q * plan.group
    seq, head, row, length, pos = torch.tensor(
        [(i.seq, i.kv_head, i.row, i.length, i.pos) for i in plan.items], dtype=torch.int64
    ).T  # (n,) each
    r = torch.arange(rows)
    tok, qh = r // plan.group, r % plan.group  # row -> token inside the item, query head inside the group
    live = tok[None, :] < length[:, None]  # (n, rows)
    t, h = row[:, None] + tok[None, :], head[:, None] * plan.group + qh[None, :]
    spare = (out.shape[0] - 1) * out.stride(0)
    q_off = torch.zeros(padded, plan.block_m, dtype=torch.int64)
    o_off = torch.full((padded, plan.block_m), spare, dtype=torch.int64)
    row_pos = torch.zeros(padded, plan.block_m, dtype=torch.int32)
    q_off[:n, :rows] = torch.where(live, t * query.stride(0) + h * query.stride(1), 0)
    o_off[:n, :rows] = torch.where(live, t * out.stride(0) + h * out.stride(1), spare)
    kv_end = pos + length
    row_pos[:n] = (kv_end - 1)[:, None].to(torch.int32)  # padding rows: the item's last position
    row_pos[:n, :rows] = torch.where(live, pos[:, None] + tok[None, :], (kv_end - 1)[:, None]).to(torch.int32)
    row_pos[n:] = row_pos[n - 1]

    def item_column(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:  # (padded,), the last item repeated
        return torch.cat([values, values[-1:].expand(padded - n)]).to(dtype)

    return (
        item_column(seq * table_stride, torch.int64),
        item_column(head * head_stride, torch.int64),
        item_column(kv_end, torch.int32),
        q_off,
        o_off,
        row_pos,
    )


def plan_attention(
    query,
    k_cache,
    block_tables,
    seq_lens,
    query_start_loc,
    block_q: int | None = None,
    block_n: int | None = None,
    block_b: int | None = None,
) -> list[BatchedPlan]:
    """The CPU launch configuration: one launch for the one-token rows (decodes), one for short chunks and one
    for long ones (prefills), each with as few programs as the tile budget allows. ``block_q`` forces one
    tile height for every request."""
    num_seqs, group = check_attention_inputs(query, k_cache, k_cache, block_tables, seq_lens)
    num_kv_heads, head_dim = k_cache.shape[2], k_cache.shape[3]
    starts, lens = query_start_loc.tolist(), seq_lens.tolist()
    q_lens = [starts[s + 1] - starts[s] for s in range(num_seqs)]
    if block_q is not None:
        groups = [(list(range(num_seqs)), block_q)]
    else:
        # three launches at most, so short rows never pad up to a long chunk's tile: decodes, short chunks, long ones
        groups = [([s for s in range(num_seqs) if q_lens[s] == 1], 1)]
        for lo, hi in ((2, SMALL_CHUNK), (SMALL_CHUNK + 1, None)):
            seqs = [s for s in range(num_seqs) if q_lens[s] >= lo and (hi is None or q_lens[s] <= hi)]
            longest = max((q_lens[s] for s in seqs), default=1)
            groups.append((seqs, min(next_pow2(longest), max(1, MAX_ROWS // group))))
    plans = []
    for seqs, bq in groups:
        items = work_items(seqs, starts, lens, num_kv_heads, bq)
        if items:
            plans.append(plan_launch(items, group, head_dim, bq, block_n, block_b))
    return plans


def launch_record_of(plan: BatchedPlan, trace: torch.Tensor, block_size: int) -> launch_record.LaunchRecord:
    """The launch as it ran: each program's items, their key tiles, and the blocks the kernel traced."""
    programs = []
    for p in range(plan.grid[0]):
        items = []
        for i, it in enumerate(plan.program_items(p), start=p * plan.block_b):
            items.append(
                launch_record.WorkItem(
                    seq=it.seq,
                    kv_head=it.kv_head,
                    split=None,
                    query_rows=(it.row, it.row + it.length),
                    query_positions=(it.pos, it.kv_end),
                    key_start=0,
                    key_stop=it.kv_end,
                    causal_from=it.pos,
                    tiles=launch_record.tiles_of(0, it.kv_end, plan.block_n),
                    blocks=launch_record.runs(trace[i, : it.kv_end].tolist()),
                )
            )
        programs.append(launch_record.ProgramRecord((p, 0, 0), tuple(items)))
    params = (
        ("BLOCK_B", plan.block_b),
        ("BLOCK_Q", plan.block_q),
        ("BLOCK_M", plan.block_m),
        ("BLOCK_N", plan.block_n),
        ("GROUP", plan.group),
    )
    return launch_record.LaunchRecord(
        "paged_batched_kernel",
        "decode" if plan.block_q == 1 else "prefill",
        launch_record.grid3(plan.grid),
        block_size,
        params,
        tuple(programs),
        True,
    )
