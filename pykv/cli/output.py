"""Writing the CLI's output files: never a half-written file, never a FIFO or a device replaced
(``pykv.border.files``); CSV cells that a spreadsheet would run as a formula are neutralised
(``pykv.border.csv_safe``)."""

from __future__ import annotations

from pykv.border.files import WriteFailed, write_atomic

__all__ = ["WriteFailed", "write_atomic"]
