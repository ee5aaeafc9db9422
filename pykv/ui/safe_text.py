"""Untrusted text (URL values, engine messages that echo them) made safe for Streamlit's Markdown:
a link in the address bar must never show learners a clickable link or load an image."""

from __future__ import annotations

import re

URL_ECHO_CHARS = 60  # how much of a URL value a message quotes

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$=^&])")


def code(value: object) -> str:
    """A URL-controlled value quoted as inline code: no Markdown, link or image inside it is rendered.
    Backticks and line breaks (which could end the code span) are removed; long values are cut."""
    text = "".join(c if c.isprintable() else " " for c in str(value)).replace("`", "'")
    if len(text) > URL_ECHO_CHARS:
        text = text[:URL_ECHO_CHARS - 1] + "…"
    return f"`{text}`" if text.strip() else "`(empty)`"


def plain(text: object) -> str:
    """Any text (an engine message that may echo a URL value) escaped so Markdown shows it as typed:
    every Markdown character is backslash-escaped (``http\\://`` is no autolink either); line breaks
    become spaces."""
    flat = " ".join(str(text).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", flat)
