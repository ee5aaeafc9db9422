"""RunTotals: what a whole run cost, the one list of fields behind a sweep's rows (and its CSV columns), a
lesson's side-run summary and the tests. A border type: ``pykv.lab.completed_run`` fills it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pykv.border.pcie import PCIE_GBPS


@dataclass(frozen=True)
class RunTotals:
    """Counts, times measured on the engine's device and, labelled so, modelled PCIe times. ``swapped_bytes``
    counts each swap-out once; ``swap_s`` and ``swap_copies`` add the swap-in. Each measured time has its CPU twin
    (``*_cpu_s``): the engine thread's CPU time over the same work (``time.thread_time``), which leaves out the time
    the thread waited while a busy machine ran other work; the counts are the same on any machine."""

    steps: int
    wall_s: float  # measured, the whole run
    cpu_s: float  # the engine thread's CPU time over the whole run
    output_tokens: int
    tokens_per_s: float  # output tokens / wall_s (0 for a run that took no time)
    tokens_per_cpu_s: float  # output tokens / cpu_s
    preemptions: int  # every preemption record, aborts included
    recomputed_tokens: int
    recompute_s: float  # forward time apportioned to re-prefilled tokens
    recompute_cpu_s: float  # the same share of the forward passes' engine-thread CPU time
    recompute_tax: float  # re-prefilled share of prefill tokens, 0-1 (0 before any prefill; pykv:recompute_tax)
    recompute_tax_time: float  # the same share of prefill forward time
    loaded_tokens: int  # dropped tokens loaded back from the CPU offloading tier instead of recomputed
    swapped_bytes: int
    swap_s: float  # measured swap-out + swap-in copy time
    swap_cpu_s: float  # the engine thread's CPU time over those copies
    swap_copies: int
    modelled_pcie_gen4_s: float  # the same copies modelled over PCIe Gen4 x16 (not measured)
    modelled_pcie_gen5_s: float  # ... and Gen5 x16

    def as_row(self) -> dict[str, Any]:
        """The fields by name, in RUN_TOTALS_COLUMNS order (a sweep row's middle)."""
        return dataclasses.asdict(self)


RUN_TOTALS_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunTotals))
MODELLED_PCIE_FIELDS: dict[str, str] = {gen: f"modelled_pcie_{gen}_s" for gen in PCIE_GBPS}  # PCIe gen -> its field
assert set(MODELLED_PCIE_FIELDS.values()) <= set(RUN_TOTALS_COLUMNS), "a RunTotals field per PCIe generation"
