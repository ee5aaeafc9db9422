"""Lesson narration (Markdown) as safe HTML for the pack: paragraphs, ``-`` lists, fenced code,
``inline code``, **bold** and *italic*. Everything is escaped first, so no markup of the text survives;
links and images stay text (a pack makes no request and points nowhere)."""

from __future__ import annotations

import re

from pykv.review_pack.page import esc

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_STREAMLIT_COLOR = re.compile(r":(?:red|green|blue|orange|violet|gray|grey|rainbow|primary)\[(.+?)\]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def inline(text: str) -> str:
    """One line of Markdown as HTML: code spans kept verbatim, then bold and italic, all escaped."""
    parts = _CODE.split(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"<code>{esc(part)}</code>")
            continue
        part = esc(_STREAMLIT_COLOR.sub(r"\1", part))
        part = _BOLD.sub(r"<strong>\1</strong>", part)
        out.append(_ITALIC.sub(r"<em>\1</em>", part))
    return "".join(out)


def markdown_html(text: str) -> str:
    """Markdown as HTML blocks: fenced code as <pre>, ``- `` items as a list, the rest as paragraphs."""
    blocks: list[str] = []
    para: list[str] = []
    items: list[str] = []
    code: list[str] = []
    fence = None

    def flush() -> None:
        if para:
            blocks.append("<p>" + inline(" ".join(para)) + "</p>")
            para.clear()
        if items:
            blocks.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                blocks.append(f"<pre>{esc(chr(10).join(code))}</pre>")
                code.clear()
                fence = None
            else:
                code.append(line)
            continue
        if m:
            flush()
            fence = m.group(1)
            continue
        stripped = line.strip()
        if not stripped:
            flush()
        elif re.match(r"^[-*] ", stripped):
            if para:
                flush()
            items.append(stripped[2:])
        elif items and line.startswith((" ", "\t")):
            items[-1] += " " + stripped
        elif stripped.startswith("#"):
            flush()
            blocks.append(f"<h3>{inline(stripped.lstrip('#').strip())}</h3>")
        else:
            if items:
                flush()
            para.append(stripped)
    if fence is not None:
        blocks.append(f"<pre>{esc(chr(10).join(code))}</pre>")
    flush()
    return "\n".join(blocks)
