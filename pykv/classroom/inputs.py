"""Checks on every value a browser can send to class mode, each with a message that says what is
expected. Values are bounded before any work is done on them (lengths first)."""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence

from pykv.classroom.errors import ClassError
from pykv.classroom.limits import (
    LEARNER_MODES,
    MAX_CHOICE_CHARS,
    MAX_CHOICES,
    MAX_LEARNER_ID_CHARS,
    MAX_LESSON_ID_CHARS,
    MAX_STEP,
)

_LESSON_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_LEARNER_ID = re.compile(r"[A-Za-z0-9_-]+")


def lesson_id(raw: object) -> str:
    if not isinstance(raw, str) or not 1 <= len(raw) <= MAX_LESSON_ID_CHARS or not _LESSON_ID.fullmatch(raw):
        raise ClassError(
            f"A lesson id is 1 to {MAX_LESSON_ID_CHARS} letters, digits, '.', '-' or '_' "
            "(the lesson's name in its link, e.g. recompute-is-a-rollback)."
        )
    return raw


def step(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, numbers.Integral) or not 1 <= int(raw) <= MAX_STEP:
        raise ClassError(f"A lesson step is a whole number from 1 to {MAX_STEP}.")
    return int(raw)


def revealed(raw: object) -> bool:
    if not isinstance(raw, bool):
        raise ClassError("Whether the answer is revealed is True or False.")
    return raw


def learner(raw: object) -> str:
    if not isinstance(raw, str) or not 1 <= len(raw) <= MAX_LEARNER_ID_CHARS or not _LEARNER_ID.fullmatch(raw):
        raise ClassError(
            f"A learner id is 1 to {MAX_LEARNER_ID_CHARS} letters, digits, '-' or '_' "
            "(the app makes one per browser tab: reload the page to get a new one)."
        )
    return raw


def mode(raw: object) -> str:
    if raw not in LEARNER_MODES:
        raise ClassError(f"A learner is either {' or '.join(LEARNER_MODES)} the class.")
    return str(raw)


def choice(raw: object, choices: object) -> str:
    """``raw`` if it is one of ``choices`` (a sequence of 1 to MAX_CHOICES short texts)."""
    if (
        isinstance(choices, (str, bytes))
        or not isinstance(choices, Sequence)
        or not 1 <= len(choices) <= MAX_CHOICES
        or not all(isinstance(c, str) and 1 <= len(c) <= MAX_CHOICE_CHARS for c in choices)
    ):
        raise ClassError(
            f"A question has 1 to {MAX_CHOICES} choices, each a text of 1 to {MAX_CHOICE_CHARS} characters."
        )
    if not isinstance(raw, str) or raw not in choices:
        shown = ", ".join(c if len(c) <= 40 else c[:39] + "…" for c in choices)
        raise ClassError(f"That answer is not one of this question's choices ({shown}): pick one of them.")
    return raw
