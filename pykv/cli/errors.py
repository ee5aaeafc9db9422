"""The CLI's errors: every one printed as one line (a config error names its flag), and output paths
checked writable before any work starts."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from pykv.border.config import ConfigError, knobs
from pykv.border.files import NotAFile, regular_target
from pykv.border.workload import validation_problems

MAX_MESSAGE_CHARS = 300  # an error line is cut to this length
_CLI_KNOBS = {spec.name for spec in knobs("cli")}


class OneLineParser(argparse.ArgumentParser):
    """argparse with its errors as one line (``error: ...``, exit code 2), not the usage block first; its
    sub-commands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        hint = f"; `{self.prog} --help` lists the flags"
        sys.stderr.write(" ".join(f"error: {message}{hint}".split())[:MAX_MESSAGE_CHARS] + "\n")
        sys.exit(2)


class UsageError(ValueError):
    """A flag value, file or combination the command cannot use (exit code 2)."""


def one_line(error: BaseException) -> str:
    """Any exception as one line of at most MAX_MESSAGE_CHARS: a config error names its flag, a pydantic
    error lists its first problems (no input dump, no web link)."""
    if isinstance(error, ValidationError):
        text = validation_problems(error)
    else:
        text = str(error) or type(error).__name__
    field = getattr(error, "field", None)
    if isinstance(error, ConfigError) and field in _CLI_KNOBS:
        text = f"{_flag(field)}: {text}"
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def quoted(text: str, limit: int = 120) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def check_writable(path: str | None, flag: str) -> None:
    """UsageError unless ``path`` can be written as a file (its folder exists, it is not a folder, we may
    write there); checked before any work, so a long run's results are never lost at the end."""
    if path is None:
        return
    shown = quoted(path)
    if not path.strip():
        raise UsageError(f"{flag} is empty; give a file path.")
    try:
        if Path(path).is_dir():
            raise UsageError(f"{flag} {shown} is a folder; give a file path inside it.")
        try:
            target = Path(regular_target(path))  # a symlink is written through; a FIFO or a device is refused
        except NotAFile as e:
            raise UsageError(f"{flag}: {e}.") from None
        folder = target.parent
        if not folder.exists():
            raise UsageError(f"{flag} {shown}: the folder {quoted(str(folder))} does not exist; create it first.")
        if not folder.is_dir():
            raise UsageError(f"{flag} {shown}: {quoted(str(folder))} is not a folder.")
        existed = target.exists()
        if existed and not os.access(target, os.W_OK):
            raise UsageError(f"{flag} {shown}: the file is not writable.")
        if not existed and not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {shown}: cannot create files in {quoted(str(folder))} (permission denied).")
        with open(target, "a"):  # the real test (a read-only file system, a full quota); writes nothing
            pass
        if not existed:
            target.unlink()
    except OSError as e:
        raise UsageError(f"{flag} {shown}: cannot write there ({e.strerror or type(e).__name__}).") from None
    except ValueError as e:  # e.g. an embedded NUL byte
        if isinstance(e, UsageError):
            raise
        raise UsageError(f"{flag} {shown}: not a usable path ({e}).") from None
