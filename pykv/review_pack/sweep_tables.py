"""The sweep pack's tables as people write numbers (fixed decimals and a unit, never 1e+03; a spread as a share of
its median): the runs, their modelled twins and the preemptions. The CSVs have every column, unformatted."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from pykv.border.units import fmt_bytes, fmt_fixed
from pykv.lab.sweep import PREEMPTION_COLUMNS, RUN_COLUMNS
from pykv.review_pack.page import Num, fitted, table
from pykv.viz.modelled_sweep import MODELLED_RUN_COLUMNS

# The Runs and Preemptions tables as the page would say them: (column, header, formatter); the CSVs have every
# column, unformatted. Numbers get fixed decimals and a unit (units.fmt_fixed, fmt_bytes): never 1e+03.
Formatter = Callable[[Any], object]


def _count(v) -> object:
    return Num(fmt_fixed(v, 0))


def _bytes(v) -> object:
    return Num("—" if v is None or v != v else fmt_bytes(float(v)))


def _s(decimals: int) -> Formatter:
    return lambda v: Num(fmt_fixed(v, decimals, "s"))


def _ms(decimals: int) -> Formatter:
    return lambda v: Num(fmt_fixed(None if v is None else v * 1e3, decimals, "ms"))


def _rate(decimals: int) -> Formatter:
    return lambda v: Num(fmt_fixed(v, decimals))


def _pct(v) -> object:
    return Num("—" if v is None or v != v else f"{100 * v:.0f}%")


RUN_TABLE: list[tuple[str, str, Formatter]] = [
    ("series", "series (release)", str),
    ("value", "value", _count),
    ("preemptions", "preemptions", _count),
    ("recomputed_tokens", "recomputed tokens", _count),
    ("swapped_bytes", "swapped out", _bytes),
    ("cpu_s", "CPU time", _s(2)),
    ("cpu_spread", "CPU spread", _pct),
    ("wall_s", "wall time", _s(2)),
    ("wall_spread", "wall spread", _pct),
    ("recompute_cpu_s", "recompute CPU time", _ms(1)),
    ("recompute_s", "recompute time", _ms(1)),
    ("swap_s", "swap time", _ms(2)),
    ("modelled_pcie_gen5_s", "swaps over PCIe Gen5 (modelled)", _ms(3)),
    ("load_1m", "load", _rate(2)),
]
MODELLED_RUN_TABLE: list[tuple[str, str, Formatter]] = [
    ("series", "series (release)", str),
    ("value", "value", _count),
    ("modelled_s", "run time (modelled)", _s(3)),
    ("modelled_tokens_per_s", "output tokens/s (modelled)", _rate(0)),
    ("modelled_recompute_s", "recompute bills (modelled)", _ms(2)),
    ("modelled_swap_s", "swap bills (modelled)", _ms(2)),
    ("modelled_delay_to_others_s", "delay to others (modelled)", _ms(2)),
]
PREEMPTION_TABLE: list[tuple[str, str, Formatter]] = [
    ("series", "series (release)", str),
    ("value", "value", _count),
    ("preemption_mode", "preempted by", str),
    ("seq_len", "victim's tokens", _count),
    ("num_bytes", "KV", _bytes),
    ("measured_cpu_s", "measured, CPU", _ms(3)),
    ("measured_s", "measured, wall", _ms(3)),
    ("recomputed_tokens", "recomputed tokens", _count),
    ("steps_lost", "steps lost", _count),
    ("modelled_pcie_gen5_s", "PCIe Gen5 (modelled)", _ms(3)),
    ("modelled_target_s", "bill on the target (modelled)", _ms(3)),
]
SPREADS = {"cpu_spread": "cpu_s", "wall_spread": "wall_s"}  # the table's spread columns: (slowest - fastest) / median
assert {c for c, _, _ in RUN_TABLE + MODELLED_RUN_TABLE} <= set(RUN_COLUMNS) | set(MODELLED_RUN_COLUMNS) | set(SPREADS)
assert {c for c, _, _ in PREEMPTION_TABLE} <= set(PREEMPTION_COLUMNS) | {"modelled_target_s"}
MAX_PREEMPTION_ROWS = 300  # rows of the preemptions table in the page (the CSV has them all)


def formatted_table(
    frame: pd.DataFrame, spec: list[tuple[str, str, Formatter]], cls: str, headers: dict[str, str] | None = None
) -> str:
    """``frame``'s columns of ``spec`` (those it has) as a page table: each cell formatted, widths fitted to what the
    columns hold (a header breaks between words, never inside one)."""
    spec = [(c, (headers or {}).get(c, h), f) for c, h, f in spec if c in frame.columns]
    columns = [h for _, h, _ in spec]
    rows = [
        tuple("—" if f is str and (v is None or v != v) else f(v) for (_, _, f), v in zip(spec, row))
        for row in frame[[c for c, _, _ in spec]].astype(object).itertuples(index=False, name=None)
    ]
    return table(columns, rows, cls, fitted(columns, rows))


def with_spreads(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the table's spread columns: (slowest - fastest) / median of each clock's end-to-end time."""
    out = runs.copy()
    for spread, name in SPREADS.items():
        if f"{name}_lo" in out:
            out[spread] = (out[f"{name}_hi"] - out[f"{name}_lo"]) / out[name]
    return out
