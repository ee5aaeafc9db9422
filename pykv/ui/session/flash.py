"""One queue of messages for the page's next run: a callback or an action that reruns the page says what
happened with ``flash(...)``, and the place that shows it calls ``show(place)`` where the message belongs.

Every message is rendered through ``safe_text.plain`` (engine and class-store messages can hold user input)."""

from __future__ import annotations

from typing import Literal

import streamlit as st

from pykv.ui import safe_text

Level = Literal["error", "warning", "info"]
Place = Literal["page", "sidebar", "target", "predict"]
_QUEUE = "flash_queue"  # session_state: [(place, level, text), ...] in the order said


def flash(text: str, level: Level = "error", place: Place = "page") -> None:
    st.session_state.setdefault(_QUEUE, []).append((place, level, str(text)))


def show(place: Place = "page", prefix: str = "") -> None:
    """Show (and drop) the messages queued for ``place``, in the order they were said; ``prefix`` opens each
    error (e.g. "Not changed: ")."""
    queue = st.session_state.get(_QUEUE)
    if not queue:
        return
    mine = [m for m in queue if m[0] == place]
    st.session_state[_QUEUE] = [m for m in queue if m[0] != place]
    for _, level, text in mine:
        shown = safe_text.plain(text)
        if level == "error":
            st.error(prefix + shown)
        elif level == "warning":
            st.warning(shown)
        else:
            st.info(shown)
