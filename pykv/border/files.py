"""Files a user names (an output, a baseline, a log to read): only regular files, never a blocking open, and an
output never half-written.

- ``open_regular`` opens without blocking (a FIFO with no writer would hang ``open``) and refuses what is not a
  regular file: a folder, a FIFO, a device (/dev/zero never ends), a socket. One-line ``NotAFile``.
- ``write_atomic`` writes a temporary file beside the target and renames it over the target: a full disk or a
  file-size limit leaves the old file as it was. A symlink is written through (the link stays, its target is
  replaced); a target that is not a regular file (a FIFO, /dev/null) is refused, never replaced by one.
"""

from __future__ import annotations

import os
import stat
import tempfile
from typing import BinaryIO


class NotAFile(ValueError):
    """A path that names no regular file (missing, a folder, a FIFO, a device, a socket); one line."""


class WriteFailed(OSError):
    """An output could not be written (a full disk, a file-size limit); the old file is left as it was."""


def _shown(path: str | os.PathLike) -> str:
    text = repr(os.fspath(path))
    return text if len(text) <= 120 else text[:116] + "...'"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """``path`` opened for binary reading; NotAFile (one line) when it is missing or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise NotAFile(f"{_shown(path)}: no such file") from None
    except OSError as exc:
        raise NotAFile(f"{_shown(path)}: cannot open it ({exc.strerror or type(exc).__name__})") from None
    except ValueError as exc:  # an embedded NUL byte
        raise NotAFile(f"{_shown(path)}: not a usable path ({exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(f"{_shown(path)} is {_kind(mode)}, not a file: give a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def regular_target(path: str | os.PathLike) -> str:
    """Where an output to ``path`` goes: the path with its symlinks resolved; NotAFile when something other than
    a regular file (a folder, a FIFO, a device) is there."""
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet (the caller checks the folder)
        return real
    except OSError as exc:
        raise NotAFile(f"{_shown(path)}: cannot look at it ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(mode):
        raise NotAFile(f"{_shown(path)} is {_kind(mode)}: give a regular file to write")
    return real


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``'s target, then rename it there: never a half-written
    file, never a FIFO or device replaced. WriteFailed (the old file kept) when the disk refuses."""
    real = regular_target(path)
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = 0o644
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pykv-", suffix=".part", dir=os.path.dirname(real))
    except OSError as exc:
        raise WriteFailed(exc.errno, f"cannot write {_shown(path)}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except OSError as exc:
        os.unlink(tmp)
        raise WriteFailed(exc.errno, f"cannot write {_shown(path)}: {exc.strerror}; the old file is left as it was")
    except BaseException:
        os.unlink(tmp)
        raise
