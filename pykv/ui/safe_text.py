"""Untrusted text (URL values, engine messages that echo them) made safe for Streamlit's Markdown:
a link in the address bar must never show learners a clickable link or load an image."""

from __future__ import annotations

import re

URL_ECHO_CHARS = 60  # how much of a URL value a message quotes

_RISKY = re.compile(r":(?=\S)|@|www\.|https?\b", re.IGNORECASE)  # a word that could render as a link/icon
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$=^&])")


def code(value: object) -> str:
    """A URL-controlled value quoted as inline code: no Markdown, link or image inside it is rendered.
    Backticks and line breaks (which could end the code span) are removed; long values are cut."""
    text = "".join(c if c.isprintable() else " " for c in str(value)).replace("`", "'")
    if len(text) > URL_ECHO_CHARS:
        text = text[: URL_ECHO_CHARS - 1] + "…"
    return f"`{text}`" if text.strip() else "`(empty)`"


def plain(text: object) -> str:
    """Any text (an engine message that may echo a URL value) made safe for Markdown: every word that a
    renderer could turn into a link, an icon or colour (a ``:`` inside it, an ``@``, ``www.``) is quoted as
    code, and every Markdown character elsewhere is backslash-escaped. Escaping alone is not enough:
    Streamlit's autolinker and its ``:material/...:`` parser see through ``https\\://``. Line breaks
    become spaces."""
    return " ".join(
        code(word) if _RISKY.search(word) else _MARKDOWN_SPECIAL.sub(r"\\\1", word) for word in str(text).split()
    )
