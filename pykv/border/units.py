"""How numbers are written for people: one formatter per unit, shared by the figures, the lessons and the CLI."""

from __future__ import annotations

import math


def fmt_bytes(n: float) -> str:
    """512 -> "512 B", 65536 -> "64 KiB", 1.5 * 2**20 -> "1.5 MiB"."""
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}".replace(".0 ", " ")
        n /= 1024
    return f"{n:.1f} GiB".replace(".0 ", " ")


def fmt_fixed(value: float | None, decimals: int, unit: str = "") -> str:
    """A number for a column of its kind: fixed decimals, thousands separated, never in scientific notation, the
    unit after it: ``fmt_fixed(0.000417 * 1e3, 3, "ms")`` -> "0.417 ms"; None and NaN -> "—"."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    text = f"{float(value):,.{decimals}f}"
    if text.lstrip("-").strip("0.,") == "":  # -0.000 reads as 0
        text = text.lstrip("-")
    return f"{text} {unit}" if unit else text


def fmt_duration(seconds: float | None) -> str:
    """A measured time in the unit that reads: 0.000005 -> "5.0 µs", 0.0123 -> "12.30 ms", 2.5 -> "2.50 s"; None,
    NaN -> "—"."""
    if seconds is None or not math.isfinite(float(seconds)):
        return "—"
    value = float(seconds)
    if abs(value) < 1e-3:
        return f"{value * 1e6:.1f} µs"
    return f"{value * 1e3:.2f} ms" if abs(value) < 1 else f"{value:,.2f} s"


def fmt_model_ms(ms: float | None) -> str:
    """A modelled duration given in ms: 3.14159 -> "3.14 ms", 420.5 -> "420 ms", 12_345 -> "12.35 s"; None -> "—"."""
    if ms is None:
        return "—"
    return f"{ms / 1e3:.2f} s" if ms >= 10_000 else f"{ms:.2f} ms" if ms < 100 else f"{ms:,.0f} ms"


def fmt_gib(num_bytes: float) -> str:
    """A memory budget, three significant digits: 3 * 2**30 -> "3 GiB", 2**29 -> "512 MiB"."""
    return f"{num_bytes / 2**30:.3g} GiB" if num_bytes >= 2**30 else f"{num_bytes / 2**20:.3g} MiB"
