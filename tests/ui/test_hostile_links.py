"""Issue 29 #5: a value from a link is never Markdown. Streamlit's Markdown turns a bare URL into a link and
``:material/x:`` into an icon even when ``:`` is backslash-escaped, so every query parameter is opened with
the same payloads and every message must keep them inside code spans."""

from __future__ import annotations

import re

import pytest
from app_helpers import messages, opened

from pykv.border.config import knobs
from pykv.ui import safe_text

PAYLOADS = [
    "[Session expired - log in again](https://pwned.example/login)",
    ":material/warning:",
    "see https://pwned.example/x now",
    "www.pwned.example/login",
    "mail a@pwned.example",
    ":red[alarm]",
]
PLAYGROUND_PARAMS = sorted({k.name for k in knobs("url")} | {"preset", "step", "device", "exercise"})


def rendered(text: str) -> list[str]:
    """What Streamlit would render as a link, an image, an icon or colour in ``text``: outside code spans,
    with Markdown's backslash escapes dropped (the autolinker and the icon parser see through them)."""
    outside = re.sub(r"`[^`\n]*`", "", text).replace("\\", "")
    return [m for m in ("](", "![", "http", "www.", ":material", ":red[", "@pwned") if m in outside]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_plain_keeps_every_payload_out_of_markdown(payload):
    assert not rendered(safe_text.plain(f"vllm_profile={payload!r} is not one of v0.6, v0.10: use one."))
    assert safe_text.plain("Not applied: 3 blocks").replace("\\", "") == "Not applied: 3 blocks"  # text stays text


@pytest.mark.parametrize("payload", PAYLOADS[:3])
def test_every_playground_parameter_echoes_a_payload_as_code(app, payload):
    opened(app, **{name: payload for name in PLAYGROUND_PARAMS})
    shown = messages(app)
    assert shown
    for text in shown:
        assert not rendered(text), text


@pytest.mark.parametrize("payload", PAYLOADS[:2])
def test_lesson_parameters_echo_a_payload_as_code(lessons_app, payload):
    opened(lessons_app, lesson="small", step=payload, path=payload)
    for text in messages(lessons_app):
        assert not rendered(text), text
    opened(lessons_app, lesson=payload)
    for text in messages(lessons_app):
        assert not rendered(text), text
