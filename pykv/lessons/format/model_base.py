"""What every lesson model shares: the strict pydantic base (``extra="forbid"``, so an unknown field
is an error, never silently ignored), the patterns names must match, and a pydantic error turned into
the FieldError that names the wrong field.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import shown

NAME = r"^[A-Za-z0-9_-]+$"  # request ids, run and tokenization names: no dots (they separate path segments)
LESSON_ID = r"^[a-z0-9]+(-[a-z0-9]+)*$"
PATTERN_HINTS = {
    NAME: "may hold only letters, digits, _ and - (no dots or spaces)",
    LESSON_ID: "is not a lesson id: use lowercase letters, digits and single dashes, like kv-cache-and-blocks",
}


class StrictModel(BaseModel):
    """The base of every model of the lesson format: frozen, and no field it does not declare."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def pydantic_problems(error: ValidationError, prefix: str = "") -> FieldError:
    """The first problem of a pydantic error as a FieldError with a dotted field (``args.n``)."""
    err = error.errors()[0]
    parts = []
    for p in err["loc"]:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    field = prefix + ("." if prefix and parts and not parts[0].startswith("[") else "") + "".join(parts)
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown field"
    elif err["type"] == "string_pattern_mismatch":
        message = f"{shown(err['input'])} " + PATTERN_HINTS.get(err["ctx"]["pattern"], message)
    elif err["type"] == "missing":
        message = "missing (this field is required)"
    return FieldError(field, message)
