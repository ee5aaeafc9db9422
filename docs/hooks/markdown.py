"""Small Markdown helpers the generated pages share: text and code a table cell cannot break, a table."""

from __future__ import annotations

from typing import Iterable, Sequence


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def cell(text: object) -> str:
    """Plain text for a table cell: one line, its pipes escaped (a bare pipe would start a new cell)."""
    return one_line(text).replace("|", "\\|")


def code(text: object) -> str:
    """Inline code for a table cell (a code span keeps its pipes; a backtick inside needs a wider fence)."""
    text = one_line(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table of finished cells (made with ``cell`` or ``code``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(one_line(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
