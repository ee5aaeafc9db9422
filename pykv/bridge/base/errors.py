"""The one error a user's input can cause: a ValueError whose message is one line (what was wrong, what to do)."""

from __future__ import annotations


class BridgeInputError(ValueError):
    """Input the bridge cannot use; the message is a single line meant for the person who supplied it."""

    def __init__(self, message: str) -> None:
        # Collapse any newline a caller let through: the CLI and the app print this as one line.
        super().__init__(" ".join(message.split()))
