"""The errors class mode raises. Each message is safe to show a user as it is (the UI shows it with
``st.error``): it says what was wrong and what to do, and never echoes an instructor secret."""

from __future__ import annotations


class ClassError(ValueError):
    """Something a user (or the deployment) can fix: a mistyped code, a closed question, a full server,
    an unreachable store."""


class ClassNotFound(ClassError):
    """No class runs under this code: it never existed, it was ended, or it expired (idle too long)."""

    def __init__(self, code: str):
        self.code = code
        super().__init__(
            f"No class {code} is running (it may have ended or expired). Ask your instructor for the code."
        )


class NotInstructor(ClassError):
    """The instructor secret given does not match the class's (a forged, stale or missing one)."""

    def __init__(self, code: str):
        self.code = code
        super().__init__(
            f"Only the instructor who started class {code} can drive or end it: "
            "this browser does not hold its instructor key. Start a class of your own instead."
        )


class StoreUnavailable(ClassError):
    """The class store cannot answer right now (Redis down or refusing): the class may well still exist, so
    a page keeps its class and tries again rather than dropping it."""
