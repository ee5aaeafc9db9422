r"""Launch records: what each kernel launch really was, filled by the launchers when asked.

The lab's kernel view draws these, never a re-derivation of what a kernel "probably" did. A launcher
records its grid, its tile sizes and, for every program, the work it was handed; where the kernel
can say what it read (``paged_batched`` writes the block of every key column it gathered), the
blocks come from that trace, else from the block table the launcher passed::

    with record_launches() as launches:      # launchers append a LaunchRecord per launch
        backend.decode(...)
    launches[0].programs[p].items[i].blocks  # physical blocks item i of program p read, in read order

A request's keys, as one item walks them (positions -> logical block -> physical block)::

    positions  0 ............................ key_stop-1 | key_stop .. tile end-1
               | cached prefix (no mask) | causal diagonal | masked tail (never read)
               tile 0 = [0, BLOCK_N), tile 1 = [BLOCK_N, 2 BLOCK_N), ...
    block of position j = block_table[seq][j // block_size]

Torch only: importing this never imports triton.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator, Literal

Phase = Literal["store", "prefill", "decode", "reduce"]

_launches: contextvars.ContextVar[list["LaunchRecord"] | None] = contextvars.ContextVar("launches", default=None)


@dataclass(frozen=True)
class TileSpan:
    """One key tile of an item: positions ``start .. start + width - 1``, of which ``start .. stop - 1`` are read."""

    start: int
    stop: int  # one past the last position read; stop .. start + width - 1 is the masked tail
    width: int  # BLOCK_N


@dataclass(frozen=True)
class WorkItem:
    """What one program owned of one request: its query rows, one KV head, the keys it walked."""

    seq: int | None  # the request's row in the step's block tables (batch order); None: several (the store)
    kv_head: int | None  # None: every KV head (the store's CPU configuration)
    split: int | None  # the split-K index (decode on a GPU); None without split-K
    query_rows: tuple[int, int]  # [start, stop) rows of the step's flat token batch
    query_positions: tuple[int, int]  # [first, last + 1) positions of those tokens
    key_start: int  # first key position walked (a split's start; 0 otherwise)
    key_stop: int  # one past the last key position walked
    causal_from: int  # keys from here on are masked causally per row (the diagonal); before: the cached prefix
    tiles: tuple[TileSpan, ...]
    blocks: tuple[int, ...]  # physical blocks read (store: written), in order, each once per run of positions


@dataclass(frozen=True)
class ProgramRecord:
    program: tuple[int, int, int]  # program ids (axis 0, 1, 2)
    items: tuple[WorkItem, ...]  # empty: a spare program that exits at once


@dataclass(frozen=True)
class LaunchRecord:
    kernel: str  # the @triton.jit function launched
    phase: Phase
    grid: tuple[int, int, int]
    block_size: int  # tokens per cache block
    params: tuple[tuple[str, int], ...]  # the launch's tile sizes (constexprs), as (name, value)
    programs: tuple[ProgramRecord, ...]  # one per program, in grid order
    traced: bool  # True: blocks come from the kernel's own trace; False: from the tables the launcher passed

    def program(self, index: int) -> ProgramRecord:
        return self.programs[index]


@contextlib.contextmanager
def record_launches() -> Iterator[list[LaunchRecord]]:
    """Collect a LaunchRecord for every kernel launch inside the block (this thread / task only)."""
    launches: list[LaunchRecord] = []
    token = _launches.set(launches)
    try:
        yield launches
    finally:
        _launches.reset(token)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Record nothing inside the block; the recording around it, if any, goes on after it."""
    token = _launches.set(None)
    try:
        yield
    finally:
        _launches.reset(token)


def recording() -> bool:
    return _launches.get() is not None


def add(record: LaunchRecord) -> None:
    launches = _launches.get()
    if launches is not None:
        launches.append(record)


def runs(blocks: list[int]) -> tuple[int, ...]:
    """Blocks in order with consecutive repeats collapsed: the per-position block list -> the block walk."""
    out: list[int] = []
    for b in blocks:
        if not out or out[-1] != b:
            out.append(b)
    return tuple(out)


def table_walk(table_row: list[int], key_start: int, key_stop: int, block_size: int) -> tuple[int, ...]:
    """The blocks a kernel reads for positions key_start .. key_stop - 1 through one block-table row."""
    return runs([table_row[j // block_size] for j in range(key_start, key_stop)])


def tiles_of(key_start: int, key_stop: int, width: int) -> tuple[TileSpan, ...]:
    """The key tiles a loop ``for start in range(key_start, key_stop, width)`` walks."""
    return tuple(TileSpan(s, min(s + width, key_stop), width) for s in range(key_start, key_stop, width))


def grid3(grid: tuple[int, ...]) -> tuple[int, int, int]:
    g = tuple(grid) + (1,) * (3 - len(grid))
    return (int(g[0]), int(g[1]), int(g[2]))
