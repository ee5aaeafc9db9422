"""Untrusted text (URL values, engine messages that echo them) made safe for Streamlit's Markdown:
a link in the address bar must never show learners a clickable link or load an image. And a lesson's Markdown
whose long identifiers may break only after a ``:``, ``_`` or ``.`` (``breakable``), with no HTML of its own."""

from __future__ import annotations

import html
import re

from pykv.lessons.format.markdown import outside_code

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


ERROR_CHARS = 300  # an error line is cut to this length


def error_line(error: BaseException) -> str:
    """An exception as one line of safe Markdown for st.error: a ValueError's own message (what was wrong, what to
    do), anything else named by its type; never a traceback."""
    text = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    text = " ".join(text.split()) or type(error).__name__
    return plain(text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…")


BREAKABLE_CHARS = 12  # an identifier this long may end a line after its : _ . (a learner's column is ~230 px)
_IDENTIFIER = re.compile(r"(?<![\w.:/])[A-Za-z][\w.:]*[_:][\w.:]*\w")  # pykv:num_preemptions_total, run.a.wall_s
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_LINK_TARGET = re.compile(r"(\]\([^)]*\))")


def _break_points(text: str) -> str:
    """``text`` with a <wbr> after each : _ . inside its long identifiers (no character added: a copy is the name)."""

    def marked(m: re.Match) -> str:
        return re.sub(r"([_:.])(?=\w)", r"\1<wbr>", m[0]) if len(m[0]) >= BREAKABLE_CHARS else m[0]

    return _IDENTIFIER.sub(marked, text)


def _prose(text: str) -> str:
    """Text outside code spans: every "<" escaped (no tag of the lesson's, or of a value filled into it, renders),
    identifiers given break points, a link's target left as it is."""
    parts = _LINK_TARGET.split(text)
    return "".join(part if i % 2 else _break_points(part.replace("<", "&lt;")) for i, part in enumerate(parts))


def breakable(markdown: str) -> str:
    """Lesson Markdown for ``st.markdown(..., unsafe_allow_html=True)`` whose long identifiers (in code spans or not)
    may end a line only after a ``:``, ``_`` or ``.``: a learner's ~230 px column broke "pykv:num_preemption / s_total"
    mid-word. The only HTML in the result is the <wbr>s and the <code> elements this adds (a code span holding an
    identifier, its text escaped); every other "<" is escaped, and fenced code blocks are kept verbatim."""

    def spans(text: str) -> str:
        out, last = [], 0
        for m in _CODE_SPAN.finditer(text):
            code = m[2][1:-1] if len(m[2]) > 2 and m[2][0] == m[2][-1] == " " else m[2]
            out.append(_prose(text[last : m.start()]))
            escaped = html.escape(code, quote=False)
            marked = _break_points(escaped)
            out.append(f"<code>{marked}</code>" if marked != escaped else m[0])
            last = m.end()
        return "".join(out) + _prose(text[last:])

    return outside_code(markdown, spans)
