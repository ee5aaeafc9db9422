"""The one error a user's input can cause: a ValueError whose message is one line (what was wrong, what to do)."""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the bidirectional overrides: a message quotes what it read (a request id, a server's
# error text), and none of these may reach a terminal (an OSC 8 link, a title change) or reorder what is shown.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class BridgeInputError(ValueError):
    """Input the bridge cannot use; the message is a single line meant for the person who supplied it."""

    def __init__(self, message: str) -> None:
        # Collapse any newline a caller let through, and drop control characters: the CLI and the app print this.
        super().__init__(" ".join(_CONTROLS.sub("?", message).split()))
