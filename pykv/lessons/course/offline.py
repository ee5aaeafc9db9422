"""Lessons stay offline: a lesson's Markdown may not load an image from another host.

An image in a lesson is fetched by every learner's browser the moment the step is shown, so a remote one
is a request to a third party from the whole room (and a tracker). Inline images (``![a](https://…)``,
``![a](//host/x)``), reference-style ones (``![a][r]`` with ``[r]: https://…``) and HTML ``<img>`` tags
with a remote ``src`` are refused at load, with the line."""

from __future__ import annotations

import re

from pykv.lessons.format.errors import FieldError

_REMOTE = r"<?\s*(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//|\\\\)"  # a scheme (https:, data:, ...) or a network path
_INLINE = re.compile(r"!\[[^\]\n]{0,500}\]\(\s*" + _REMOTE)
_REFERENCE = re.compile(r"^ {0,3}\[([^\]\n]{1,200})\]:\s*" + _REMOTE, re.MULTILINE)
_HTML_IMG = re.compile(r"<img\b[^>\n]{0,500}?\bsrc\s*=\s*[\"']?\s*" + _REMOTE, re.IGNORECASE)


def check_offline(text: str) -> None:
    """FieldError naming the line of the first image in ``text`` that another host would serve."""
    hits = [m.start() for m in (_INLINE.search(text), _HTML_IMG.search(text)) if m]
    references = {m.group(1).strip().lower(): m.start() for m in _REFERENCE.finditer(text)}
    for m in re.finditer(r"!\[([^\]\n]{0,500})\](?:\[([^\]\n]{0,200})\])?", text):
        label = (m.group(2) or m.group(1)).strip().lower()
        if label in references:
            hits.append(m.start())
    if hits:
        line = text.count("\n", 0, min(hits)) + 1
        raise FieldError(
            "",
            f"line {line}: an image from another host; lessons stay offline (a learner's "
            "browser would fetch it): remove it or describe it in words",
        )
