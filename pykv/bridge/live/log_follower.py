"""Follows a server's log as it grows: a file (``tail -F``: from its start, then what is appended; a file that
shrinks was rotated or truncated and is read again from its start) or a stream (stdin: ``docker logs -f vllm |
python -m pykv attach --log -``).

A file over SKIP_ABOVE_BYTES is read from its head (the start-up) and its last TAIL_BYTES, not through its middle.
A reader thread puts lines on a bounded queue; ``take()`` hands them over without blocking. What is kept is
bounded by the window (live/window.py), each line by MAX_LINE_CHARS, and the queue by MAX_QUEUED lines: a
writer faster than the window drains is slowed (a pipe) or read later (a file), never held in memory whole.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import IO, Callable

from pykv.border.files import NotAFile, open_regular
from pykv.bridge.base.errors import BridgeInputError

MAX_LINE_CHARS = 64 * 1024  # a longer line is cut (a config dump is ~8 KB)
MAX_QUEUED = 100_000
MAX_TAKE = 50_000  # lines one take() hands over
FILE_POLL_S = 0.2  # how often a file at its end is looked at again
SKIP_ABOVE_BYTES = 64 * 1024 * 1024  # a bigger file is read from its head and its last TAIL_BYTES (_skip_middle)
TAIL_BYTES = 16 * 1024 * 1024
HEAD_LINES = 2000  # as the window keeps (live/window.py)


class LogFollower:
    """``source``: a path, or "-" with ``stream`` (stdin). ``ended``: the stream closed (a file never ends)."""

    def __init__(self, source: str, stream: IO[bytes] | None = None) -> None:
        self.source = source
        self.lines_read = 0
        self.skipped_bytes = 0  # a big file's middle, not read (_skip_middle)
        self.error: str | None = None  # why following stopped (one line), if it did
        self._queue: queue.Queue[str] = queue.Queue(MAX_QUEUED)
        self._stop = threading.Event()
        self._ended = threading.Event()
        if source == "-":
            if stream is None:
                raise BridgeInputError("--log - reads stdin: pipe the log in (docker logs -f NAME | ...)")
            target: Callable[..., None] = self._follow_stream
            args: tuple = (stream,)
        else:
            try:
                open_regular(source).close()  # a FIFO, a device or a folder is refused now, in one line
            except NotAFile as exc:
                raise BridgeInputError(f"--log {exc}") from None
            except OSError as exc:
                raise BridgeInputError(f"cannot read the log {source}: {exc.strerror or exc}") from None
            target, args = self._follow_file, ()
        self._thread = threading.Thread(target=target, args=args, name="pykv-log-follower", daemon=True)
        self._thread.start()

    @property
    def ended(self) -> bool:
        return self._ended.is_set() and self._queue.empty()

    def take(self) -> list[str]:
        lines: list[str] = []
        while len(lines) < MAX_TAKE:
            try:
                lines.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return lines

    def close(self) -> None:
        self._stop.set()

    def _put(self, raw: bytes) -> None:
        line = raw[:MAX_LINE_CHARS].decode("utf-8", errors="replace").rstrip("\r\n")
        while not self._stop.is_set():
            try:
                self._queue.put(line, timeout=0.5)
                self.lines_read += 1
                return
            except queue.Full:
                continue

    def _follow_stream(self, stream: IO[bytes]) -> None:
        try:
            while not self._stop.is_set():
                raw = stream.readline(MAX_LINE_CHARS + 1)
                if not raw:
                    break
                self._put(raw)
                if len(raw) > MAX_LINE_CHARS and not raw.endswith(b"\n"):
                    self._skip_rest(stream)
        except (OSError, ValueError) as exc:  # a closed pipe
            self.error = f"the log stream failed: {exc}"
        finally:
            self._ended.set()

    def _follow_file(self) -> None:
        handle = None
        position = 0
        try:
            while not self._stop.is_set():
                if handle is None:
                    handle, position = open_regular(self.source), 0
                    position = self._skip_middle(handle)
                size = _size(self.source)
                if size is not None and size < position:  # rotated or truncated: read the new file from its start
                    handle.close()
                    handle = None
                    continue
                raw = handle.readline(MAX_LINE_CHARS + 1)
                if not raw or not raw.endswith(b"\n") and len(raw) <= MAX_LINE_CHARS:
                    handle.seek(position)  # a half-written last line waits for its end
                    self._stop.wait(FILE_POLL_S)
                    continue
                position = handle.tell()
                self._put(raw)
        except (OSError, NotAFile) as exc:
            self.error = f"cannot follow the log {self.source}: {getattr(exc, 'strerror', None) or exc}"
        finally:
            if handle is not None:
                handle.close()
            self._ended.set()

    def _skip_middle(self, handle) -> int:
        """A file over SKIP_ABOVE_BYTES when first opened: its first HEAD_LINES lines (the start-up), then its last
        TAIL_BYTES (the recent stats lines); the middle is history the window would not keep. Where to go on from."""
        size = _size(self.source) or 0
        if size <= SKIP_ABOVE_BYTES:
            return 0
        for _ in range(HEAD_LINES):
            raw = handle.readline(MAX_LINE_CHARS + 1)
            if not raw.endswith(b"\n"):
                break
            self._put(raw)
        if handle.tell() < size - TAIL_BYTES:
            handle.seek(size - TAIL_BYTES)
            handle.readline(MAX_LINE_CHARS + 1)  # the rest of a line cut by the seek
            self.skipped_bytes = handle.tell()
        return handle.tell()

    @staticmethod
    def _skip_rest(stream: IO[bytes]) -> None:
        while True:
            raw = stream.readline(MAX_LINE_CHARS)
            if not raw or raw.endswith(b"\n"):
                return


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None
