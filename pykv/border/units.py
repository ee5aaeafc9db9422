"""How numbers are written for people: one formatter per unit, shared by the figures, the lessons and the CLI."""

from __future__ import annotations


def fmt_bytes(n: float) -> str:
    """512 -> "512 B", 65536 -> "64 KiB", 1.5 * 2**20 -> "1.5 MiB"."""
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}".replace(".0 ", " ")
        n /= 1024
    return f"{n:.1f} GiB".replace(".0 ", " ")
