"""Text the CLI prints that quotes what it read (a request id from a log, a server's error text): control
characters are shown escaped, never obeyed, so a log cannot plant an OSC 8 link, retitle the terminal, move the
cursor or reorder a line (the bidirectional overrides)."""

from __future__ import annotations

import logging
import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional marks, embeddings, overrides and isolates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character written out (ESC as ``\\x1b``); tabs and newlines kept."""
    return _UNSAFE.sub(_escaped, text)


class SafeFormatter(logging.Formatter):
    """A logging formatter whose lines are terminal-safe (an engine line quotes request ids)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))
