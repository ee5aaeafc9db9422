"""Reads a file (plain or .gz) or a pasted text blob line by line, within bounds, never holding it whole.

Bounds: an over-long line keeps its first MAX_LINE_BYTES (records glued at its start survive) and skips the rest;
a .gz stops after max_decompressed bytes (a zip bomb ends there); NUL bytes at the start mean a binary file.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from pykv.border.files import NotAFile, open_regular
from pykv.bridge.base.errors import BridgeInputError

MAX_LINE_BYTES = 64 * 1024
MAX_DECOMPRESSED_BYTES = 2 * 1024**3
HEAD_BYTES = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class ReadStats:
    lines: int = 0
    bytes_read: int = 0
    overlong_lines: int = 0
    stopped_at_bound: bool = False


def looks_like_path(source: str | os.PathLike) -> bool:
    """A Path, or a short one-line string naming an existing file (anything else is pasted text)."""
    if isinstance(source, os.PathLike):
        return True
    return len(source) < 4096 and "\n" not in source and os.path.isfile(source)


_CONTROL = bytes(set(range(32)) - {9, 10, 13, 27})  # tab, newlines and ESC (ANSI colours) are text


def looks_binary(start: bytes) -> bool:
    """More than 10% control bytes: a stray NUL in a log line is not a binary file, a model file is."""
    if not start:
        return False
    controls = len(start) - len(start.translate(None, _CONTROL))
    return controls > 0.10 * len(start)


class TextSource:
    """One input: `head` (its first 64 KB as text, for sniffing) and `lines()` (numbered from 1, bounded)."""

    def __init__(self, source: str | os.PathLike | bytes, max_decompressed: int = MAX_DECOMPRESSED_BYTES) -> None:
        self.max_decompressed = max_decompressed
        self.stats = ReadStats()
        self._path: Path | None = None
        self._blob: bytes | None = None
        if isinstance(source, bytes):
            self._blob, self.label = source, "pasted bytes"
        elif looks_like_path(source):
            self._path = Path(source)
            self.label = self._path.name
        elif isinstance(source, str):
            self._blob, self.label = source.encode("utf-8", "surrogatepass"), "pasted text"
        else:
            raise BridgeInputError(f"cannot read a {type(source).__name__}: give a file path or the text itself")
        self.head = self._read_head()

    def _open(self) -> BinaryIO:
        if self._blob is not None:
            raw: BinaryIO = io.BytesIO(self._blob)
        else:
            assert self._path is not None, "a source is a blob or a path"
            try:  # never blocks (a FIFO), refuses a folder or a device (/dev/zero): closed by the caller's with-block
                raw = open_regular(self._path)
            except NotAFile as exc:
                raise BridgeInputError(str(exc)) from None
        if raw.read(2) == _GZIP_MAGIC:
            raw.seek(0)
            return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
        raw.seek(0)
        return raw

    def _read_head(self) -> str:
        with self._open() as stream:
            try:
                head = stream.read(HEAD_BYTES)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                message = f"{self.label}: damaged gzip ({exc}); give the plain text or the whole .gz"
                raise BridgeInputError(message) from None
        if looks_binary(head[:8192]):
            raise BridgeInputError(
                f"{self.label} looks binary (control bytes throughout its start): give a vLLM log, "
                "a /metrics body or a trace as text or .gz"
            )
        return head.decode("utf-8", "replace")

    def lines(self) -> Iterator[tuple[int, str]]:
        """Yields (line number, text without the newline); non-UTF-8 bytes become U+FFFD."""
        stats = self.stats
        with self._open() as stream:
            number = 0
            while True:
                try:
                    raw = stream.readline(MAX_LINE_BYTES)
                except (OSError, EOFError, gzip.BadGzipFile):
                    return  # a truncated .gz: keep what came before
                if not raw:
                    return
                stats.bytes_read += len(raw)
                if not raw.endswith(b"\n"):
                    stats.bytes_read += self._skip_rest_of_line(stream, raw)
                number += 1
                stats.lines = number
                yield number, raw.decode("utf-8", "replace").rstrip("\r\n")
                if stats.bytes_read > self.max_decompressed:
                    stats.stopped_at_bound = True
                    return

    def _skip_rest_of_line(self, stream: BinaryIO, first: bytes) -> int:
        """Drops the rest of an over-long line in bounded chunks; returns the bytes skipped."""
        if len(first) < MAX_LINE_BYTES:
            return 0  # the last line of the input, just without a newline
        self.stats.overlong_lines += 1
        skipped = 0
        while skipped <= self.max_decompressed:
            try:
                chunk = stream.readline(MAX_LINE_BYTES)
            except (OSError, EOFError, gzip.BadGzipFile):
                return skipped
            skipped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return skipped
        return skipped
