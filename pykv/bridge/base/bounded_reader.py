"""Reads a file (plain or .gz), an uploaded file object or a pasted text blob line by line, within bounds, never
holding it whole.

Bounds: an over-long line keeps its first MAX_LINE_BYTES (records glued at its start survive) and skips the rest;
a .gz stops after max_decompressed bytes (a zip bomb ends there); NUL bytes at the start mean a binary file. A
``ReadBudget`` adds what bytes do not bound: lines (a 2.6 MB .gz of newlines is 2 GiB of empty lines, ~2 h of a
core to walk), CPU time, and a stop when whoever asked is gone; it also reports progress. A read stopped by its
budget keeps what came before and says why in one line (``ReadStats.stop_reason``); a cancelled one raises
``ReadCancelled``.
"""

from __future__ import annotations

import gzip
import io
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from pykv.border.files import NotAFile, open_regular
from pykv.bridge.base.errors import BridgeInputError

MAX_LINE_BYTES = 64 * 1024
MAX_DECOMPRESSED_BYTES = 2 * 1024**3
MAX_LINES_READ = 10_000_000  # lines of all sources of one read (a vLLM log writes a stats line every 10 s)
HEAD_BYTES = 64 * 1024
CHECK_EVERY_LINES = 2048  # the budget is looked at this often (and every 256 chunks of an over-long line)
_GZIP_MAGIC = b"\x1f\x8b"


class ReadCancelled(BridgeInputError):
    """The read was stopped by its ``should_stop`` (the browser session that asked for it is gone)."""


@dataclass
class ReadStats:
    lines: int = 0
    bytes_read: int = 0
    overlong_lines: int = 0
    stopped_at_bound: bool = False  # max_decompressed reached
    stop_reason: str | None = None  # a ReadBudget stopped it: why, in one line


@dataclass
class ReadBudget:
    """What one read (every source of one diagnosis together) may spend besides bytes.

    ``cpu_s``: seconds of this thread's CPU time from the budget's creation (None: unbounded); ``should_stop``:
    asked every CHECK_EVERY_LINES lines, True cancels the read (ReadCancelled); ``progress``: called with
    (bytes read, lines read, seconds so far) at most every ``progress_every_s``.
    """

    max_lines: int = MAX_LINES_READ
    cpu_s: float | None = None
    should_stop: Callable[[], bool] | None = None
    progress: Callable[[int, int, float], None] | None = None
    progress_every_s: float = 0.5
    lines: int = 0  # read so far, every source
    bytes_read: int = 0
    started: float = field(default_factory=time.thread_time)
    _said: float = field(default_factory=time.monotonic)

    def spent_s(self) -> float:
        return time.thread_time() - self.started

    def check(self) -> str | None:
        """Why the read must stop now (one line), or None; raises ReadCancelled when ``should_stop`` says so."""
        if self.should_stop is not None and self.should_stop():
            raise ReadCancelled("reading stopped: the page that asked for it was closed")
        if self.lines >= self.max_lines:
            return f"reading stopped after {self.lines:,} lines (the limit: {self.max_lines:,}); the rest was not read"
        spent = self.spent_s()
        if self.cpu_s is not None and spent >= self.cpu_s:
            return (
                f"reading stopped after {spent:.0f} s of CPU time (the limit: {self.cpu_s:g} s) at line "
                f"{self.lines:,}; the rest was not read"
            )
        if self.progress is not None and time.monotonic() - self._said >= self.progress_every_s:
            self._said = time.monotonic()
            self.progress(self.bytes_read, self.lines, spent)
        return None


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

    def __init__(
        self,
        source: str | os.PathLike | bytes | BinaryIO,
        max_decompressed: int = MAX_DECOMPRESSED_BYTES,
        budget: ReadBudget | None = None,
    ) -> None:
        self.max_decompressed = max_decompressed
        self.budget = budget or ReadBudget()
        self.stats = ReadStats()
        self._path: Path | None = None
        self._blob: bytes | None = None
        self._file: BinaryIO | None = None
        if isinstance(source, bytes):
            self._blob, self.label = source, "pasted bytes"
        elif isinstance(source, (str, os.PathLike)) and looks_like_path(source):
            self._path = Path(source)
            self.label = self._path.name
        elif isinstance(source, str):
            self._blob, self.label = source.encode("utf-8", "surrogatepass"), "pasted text"
        elif not isinstance(source, os.PathLike) and hasattr(source, "readinto") and hasattr(source, "seek"):
            self._file, self.label = source, str(getattr(source, "name", "") or "uploaded file")  # never copied
        else:
            raise BridgeInputError(f"cannot read a {type(source).__name__}: give a file path or the text itself")
        self.head = self._read_head()

    def _open(self) -> BinaryIO:
        if self._file is not None:
            return self._open_file(self._file)
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

    @staticmethod
    def _open_file(file: BinaryIO) -> BinaryIO:
        """A borrowed file object read from its start, through a reader whose close leaves it open."""
        file.seek(0)
        raw = io.BufferedReader(_Borrowed(file))
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
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
        """Yields (line number, text without the newline); non-UTF-8 bytes become U+FFFD. Stops at the bounds
        and the budget (see the module's docstring)."""
        stats, budget = self.stats, self.budget
        with self._open() as stream:
            number = 0
            while True:
                if number % CHECK_EVERY_LINES == 0:
                    reason = budget.check()
                    if reason is not None:
                        stats.stop_reason = reason
                        return
                try:
                    raw = stream.readline(MAX_LINE_BYTES)
                except (OSError, EOFError, gzip.BadGzipFile):
                    return  # a truncated .gz: keep what came before
                if not raw:
                    return
                stats.bytes_read += len(raw)
                budget.bytes_read += len(raw)
                if not raw.endswith(b"\n"):
                    skipped = self._skip_rest_of_line(stream, raw)
                    stats.bytes_read += skipped
                    budget.bytes_read += skipped
                    if stats.stop_reason is not None:
                        return
                number += 1
                stats.lines = number
                budget.lines += 1
                yield number, raw.decode("utf-8", "replace").rstrip("\r\n")
                if stats.bytes_read > self.max_decompressed:
                    stats.stopped_at_bound = True
                    return

    def _skip_rest_of_line(self, stream: BinaryIO, first: bytes) -> int:
        """Drops the rest of an over-long line in bounded chunks; returns the bytes skipped."""
        if len(first) < MAX_LINE_BYTES:
            return 0  # the last line of the input, just without a newline
        self.stats.overlong_lines += 1
        skipped = chunks = 0
        while skipped <= self.max_decompressed:
            chunks += 1
            if chunks % 256 == 0:
                reason = self.budget.check()
                if reason is not None:
                    self.stats.stop_reason = reason
                    return skipped
            try:
                chunk = stream.readline(MAX_LINE_BYTES)
            except (OSError, EOFError, gzip.BadGzipFile):
                return skipped
            skipped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return skipped
        return skipped


class _Borrowed(io.RawIOBase):
    """A file object someone else owns (Streamlit's UploadedFile), read without copying; closing this leaves it open."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._file.readinto(buffer)  # type: ignore[attr-defined]
