"""A ClassRecord as the flat text fields of a Redis hash, and back, checking every field read back.

Redis is shared: anyone who reaches it can ``HSET`` garbage into a class's hash. ``from_fields`` holds
every field to the bounds the rules hold a browser's values to and raises ``CorruptRecord`` (naming
the field) for anything else, so the store can end that one class with a logged warning instead of
failing every follower with a ValueError.
"""

from __future__ import annotations

import math
import re

from pykv.classroom import inputs
from pykv.classroom.errors import ClassError
from pykv.classroom.state import ClassState
from pykv.classroom.store import ClassRecord

FIELDS = ("lesson_id", "step", "revealed", "version", "created_at", "updated_at", "secret_hash", "joined", "step_at")
MAX_VERSION = 10**12  # a class bumps its version once per instructor action
_DIGITS = re.compile(r"[0-9]{1,13}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FLOAT_CHARS = 32


class CorruptRecord(ValueError):
    """A field of a class's stored hash is missing or not what the app writes there."""

    def __init__(self, field: str, value: object):
        self.field = field
        shown = repr(value) if value is None or len(str(value)) <= 40 else repr(str(value)[:40]) + "…"
        super().__init__(f"field {field!r} is {shown}")


def to_fields(record: ClassRecord) -> list[str]:
    s = record.state
    pairs = {
        "lesson_id": s.lesson_id,
        "step": str(s.step),
        "revealed": "1" if s.revealed else "0",
        "version": str(s.version),
        "created_at": repr(s.created_at),
        "updated_at": repr(s.updated_at),
        "secret_hash": record.secret_hash,
        "joined": "1" if s.joined else "0",
        "step_at": repr(s.step_at),
    }
    return [item for pair in pairs.items() for item in pair]


def parse_version(raw: str | None) -> int:
    """A stored version (CorruptRecord unless it is a whole number from 1 to MAX_VERSION)."""
    if not isinstance(raw, str) or not _DIGITS.fullmatch(raw) or not 1 <= int(raw) <= MAX_VERSION:
        raise CorruptRecord("version", raw)
    return int(raw)


def from_fields(code: str, h: dict[str, str]) -> ClassRecord:
    """The record in hash ``h`` of class ``code``; CorruptRecord for the first bad or missing field."""

    def field(name: str) -> str:
        value = h.get(name)
        if not isinstance(value, str):
            raise CorruptRecord(name, value)
        return value

    def number(name: str) -> float:
        value = field(name)
        try:
            parsed = float(value) if len(value) <= _FLOAT_CHARS else math.nan
        except ValueError:
            parsed = math.nan
        if not math.isfinite(parsed) or parsed < 0:
            raise CorruptRecord(name, value)
        return parsed

    try:
        lesson = inputs.lesson_id(field("lesson_id"))
    except ClassError:
        raise CorruptRecord("lesson_id", h.get("lesson_id")) from None
    raw_step = field("step")
    if not _DIGITS.fullmatch(raw_step):
        raise CorruptRecord("step", raw_step)
    try:
        step = inputs.step(int(raw_step))
    except ClassError:
        raise CorruptRecord("step", raw_step) from None
    if field("revealed") not in ("0", "1"):
        raise CorruptRecord("revealed", h["revealed"])
    if not _HEX64.fullmatch(field("secret_hash")):
        raise CorruptRecord("secret_hash", h["secret_hash"])
    joined = h.get("joined", "1")  # a record written before the field: its class runs as joined
    if joined not in ("0", "1"):
        raise CorruptRecord("joined", joined)
    state = ClassState(
        code=code,
        lesson_id=lesson,
        step=step,
        revealed=h["revealed"] == "1",
        version=parse_version(h.get("version")),
        created_at=number("created_at"),
        updated_at=number("updated_at"),
        joined=joined == "1",
        step_at=number("step_at") if "step_at" in h else 0.0,
    )
    return ClassRecord(state, h["secret_hash"])
