"""What every sweep figure draws the same way: one line per series (a mode under one vLLM release, named with it:
"recompute, vLLM 0.6.3 (V0)"), coloured by its mode and marked by its release; a measured time on the clock the
page chose, its median with bars from the fastest to the slowest repeat, and a ring round a point whose spread is
large (``pykv.border.timing_measures``)."""

from __future__ import annotations

from typing import Iterator

import pandas as pd

from pykv.border.timing_measures import MEASURES, NOISY_SPREAD, is_noisy, twin
from pykv.border.vllm_profiles import PROFILES

# One marker per release, the same in every chart: a series on another release stands out from the sweep's own.
RELEASE_SYMBOLS = dict(zip(PROFILES, ("circle", "triangle-up", "diamond", "square")))
NOISY_NAME = f"spread > {NOISY_SPREAD:.0%} of the median"


def series_groups(frame: pd.DataFrame, sort_by: str = "value") -> Iterator[tuple[str, str, str, pd.DataFrame]]:
    """(label, mode, vllm_profile, rows) per series, in the frame's order, each sorted by ``sort_by``. A frame made
    before series existed (no "series" column) groups by mode."""
    key = "series" if "series" in frame.columns and frame["series"].notna().all() else "mode"
    for label, group in frame.sort_values(sort_by).groupby(key, sort=False):
        mode = str(group["mode"].iloc[0]).split(" · ")[0]
        profile = str(group["vllm_profile"].iloc[0]) if "vllm_profile" in group else ""
        yield str(label), mode, profile, group


def symbol(profile: str) -> str:
    return RELEASE_SYMBOLS.get(profile, "circle")


def column(base: str, measure: str, frame: pd.DataFrame) -> str:
    """``base`` (a wall-clock column) on ``measure``'s clock, or ``base`` itself where the frame lacks the twin."""
    other = twin(base, measure)
    return other if other in frame.columns else base


def error_bars(group: pd.DataFrame, name: str, scale: float = 1.0) -> dict | None:
    """Plotly's ``error_y`` from the median ``name`` to its fastest and slowest repeat; None without a spread."""
    lo, hi = f"{name}_lo", f"{name}_hi"
    if lo not in group or hi not in group or group[lo].isna().all():
        return None
    med = group[name].astype(float)
    return dict(
        type="data",
        symmetric=False,
        array=[max(0.0, v) * scale for v in (group[hi].astype(float) - med).fillna(0.0)],
        arrayminus=[max(0.0, v) * scale for v in (med - group[lo].astype(float)).fillna(0.0)],
        thickness=1.2,
        width=3,
    )


def noisy_rows(group: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows whose ``name`` has a spread over NOISY_SPREAD of its median."""
    lo, hi = f"{name}_lo", f"{name}_hi"
    if lo not in group or hi not in group:
        return group.iloc[0:0]
    mask = [is_noisy(a, b, m) for a, b, m in zip(group[lo], group[hi], group[name])]
    return group[mask]


def timing_note(frame: pd.DataFrame, measure: str) -> str:
    """``CPU time of the engine thread, median of 3 repeats (bars: fastest to slowest), load 1.3–4.1``."""
    repeats = int(frame["repeats"].max()) if "repeats" in frame and frame["repeats"].notna().any() else 1
    what = MEASURES[measure]
    if repeats > 1:
        what += f", median of {repeats} repeats (bars: fastest to slowest)"
    if "load_1m" in frame and frame["load_1m"].notna().any():
        lo, hi = f"{frame['load_1m'].min():.1f}", f"{frame['load_1m'].max():.1f}"
        what += f", load average {lo}" + (f"–{hi}" if hi != lo else "")
    return what


def ring(x, y, unit: str, **extra) -> dict:
    """Rings round noisy points (one legend entry for all of them)."""
    return dict(
        type="scatter",
        x=list(x),
        y=list(y),
        name=NOISY_NAME,
        legendgroup="noisy",
        mode="markers",
        marker=dict(symbol="circle-open", size=16, color="#999999", line=dict(width=2)),
        hovertemplate=f"spread over {NOISY_SPREAD:.0%} of the median<br>%{{y:.3g}} {unit}<extra></extra>",
        **extra,
    )
