"""A step's ```actions and ```expect blocks as data: the action models, Check and ValueOf.

Both are written in YAML as one-key mappings (``- step: 3``) and operator mappings (``- that: PATH`` +
``equals: VALUE``); ``parse_action`` / ``Check.parse`` turn them into the models below and raise
FieldError naming the field that is wrong.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError

from pykv.border.limits import MAX_STEPS
from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.limits import (
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    MAX_PROMPT_CHARS,
    MAX_TOKENS,
    MAX_WHY_CHARS,
    clip,
    shown,
)
from pykv.lessons.format.model_base import NAME, StrictModel, pydantic_problems
from pykv.lessons.format.workload_spec import WorkloadSpec

OPERATORS = (
    "equals",
    "not_equals",
    "at_least",
    "at_most",
    "greater_than",
    "less_than",
    "contains",
    "not_contains",
    "is_none",
)
NUMERIC_OPERATORS = ("at_least", "at_most", "greater_than", "less_than")


# ---- checks --------------------------------------------------------------------------------


class ValueOf(StrictModel):
    """An operand read from the state: ``{value_of: PATH, times: FACTOR}``."""

    value_of: str = Field(max_length=MAX_PATH_CHARS)
    times: float | None = Field(default=None, allow_inf_nan=False)

    def describe(self) -> str:
        return self.value_of + (f" × {self.times:g}" if self.times is not None else "")


class Check(StrictModel):
    """``that: PATH`` compared by one operator with a literal or a ValueOf; ``why`` is shown beside it."""

    that: str
    op: str
    operand: Any = None
    why: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> "Check":
        if not isinstance(raw, dict):
            raise FieldError("", f"a check is a mapping like {{that: PATH, equals: VALUE}}, got {shown(raw)}")
        if "that" not in raw:
            raise FieldError("that", "missing: a check needs 'that: PATH' (what to look at)")
        if not isinstance(raw["that"], str) or not raw["that"] or len(raw["that"]) > MAX_PATH_CHARS:
            raise FieldError(
                "that",
                f"must be a value path such as request.a.status (at most {MAX_PATH_CHARS} "
                f"characters), got {shown(raw['that'])}",
            )
        ops = [k for k in raw if k in OPERATORS]
        for key in raw:
            if key not in OPERATORS and key not in ("that", "why"):
                raise FieldError(
                    clip(str(key), 40), f"unknown operator {shown(key)}; use one of {', '.join(OPERATORS)}"
                )
        if len(ops) != 1:
            raise FieldError(
                "that", f"a check takes exactly one operator ({', '.join(OPERATORS)}); got {', '.join(ops) or 'none'}"
            )
        op, operand = ops[0], raw[ops[0]]
        if isinstance(operand, dict):
            try:
                operand = ValueOf.model_validate(operand)
            except ValidationError as e:
                raise pydantic_problems(e, op) from None
            if op == "is_none":
                raise FieldError(op, "is_none takes true or false, not a value_of")
        elif op == "is_none" and not isinstance(operand, bool):
            raise FieldError(op, f"is_none takes true or false, got {shown(operand)}")
        elif op in NUMERIC_OPERATORS and (isinstance(operand, bool) or not isinstance(operand, (int, float))):
            raise FieldError(op, f"{op} compares numbers; got {shown(operand)}")
        elif op in NUMERIC_OPERATORS and not math.isfinite(operand):
            raise FieldError(op, f"{op} compares with a finite number; got {shown(operand)}")
        why = raw.get("why")
        if why is not None and (not isinstance(why, str) or len(why) > MAX_WHY_CHARS):
            raise FieldError("why", f"must be text of at most {MAX_WHY_CHARS} characters, got {shown(why)}")
        return cls(that=raw["that"], op=op, operand=operand, why=why)

    def describe(self) -> str:
        operand = self.operand.describe() if isinstance(self.operand, ValueOf) else clip(repr(self.operand), 300)
        return f"{self.that} {self.op.replace('_', ' ')} {operand}"


# ---- actions -------------------------------------------------------------------------------


class StepAction(StrictModel):
    kind: ClassVar[str] = "step"
    count: int = Field(ge=1, le=MAX_STEPS)

    def describe(self) -> str:
        return f"step {self.count}"


class RunUntil(StrictModel):
    kind: ClassVar[str] = "run_until"
    until: Literal["preemption", "end"] | Check

    def describe(self) -> str:
        return f"run until {self.until.describe() if isinstance(self.until, Check) else self.until}"


class AddRequest(StrictModel):
    kind: ClassVar[str] = "add_request"
    request_id: str = Field(pattern=NAME, max_length=MAX_NAME_CHARS)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    max_tokens: int = Field(ge=1, le=MAX_TOKENS)
    ignore_eos: bool = False

    def describe(self) -> str:
        return f"add request {self.request_id} ({self.max_tokens} tokens max)"


class Configure(StrictModel):
    kind: ClassVar[str] = "configure"
    changes: dict[str, Any]

    def describe(self) -> str:
        return "configure " + ", ".join(f"{k}={v!r}" for k, v in self.changes.items())


class RunAction(StrictModel):
    kind: ClassVar[str] = "run"
    name: str = Field(pattern=NAME, max_length=MAX_NAME_CHARS)
    config: dict[str, Any] = Field(default_factory=dict)
    workload: WorkloadSpec | None = None

    def describe(self) -> str:
        changes = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"side run {self.name}" + (f" with {changes}" if changes else "")


class Tokenize(StrictModel):
    kind: ClassVar[str] = "tokenize"
    name: str = Field(pattern=NAME, max_length=MAX_NAME_CHARS)
    a: str = Field(max_length=MAX_PROMPT_CHARS)
    b: str = Field(max_length=MAX_PROMPT_CHARS)

    def describe(self) -> str:
        return f"tokenize {self.name}: {clip(repr(self.a), 100)} vs {clip(repr(self.b), 100)}"


Action = StepAction | RunUntil | AddRequest | Configure | RunAction | Tokenize
ACTIONS: dict[str, type[Action]] = {
    a.kind: a for a in (StepAction, RunUntil, AddRequest, Configure, RunAction, Tokenize)
}


def parse_action(raw: Any) -> Action:
    """One ``- key: value`` item of an ``actions`` block; FieldError names the part that is wrong."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise FieldError("", f"an action is a mapping with exactly one key ({', '.join(ACTIONS)}), got {shown(raw)}")
    ((key, value),) = raw.items()
    if key not in ACTIONS:
        raise FieldError(clip(str(key), 40), f"unknown action {shown(key)}; use one of {', '.join(ACTIONS)}")
    try:
        if key == "step":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS:
                raise FieldError(key, f"takes a number of engine steps (1 to {MAX_STEPS}), got {shown(value)}")
            return StepAction(count=value)
        if key == "run_until":
            if isinstance(value, dict):
                try:
                    return RunUntil(until=Check.parse(value))
                except FieldError as e:
                    raise FieldError(f"{key}.{e.field}" if e.field else key, e.problem) from None
            if value not in ("preemption", "end"):
                raise FieldError(
                    key, f"takes preemption, end or a check {{that: PATH, <op>: VALUE}}; got {shown(value)}"
                )
            return RunUntil(until=value)
        if key == "configure":
            if not isinstance(value, dict) or not value:
                raise FieldError(key, f"takes a mapping of EngineConfig fields to new values, got {shown(value)}")
            return Configure(changes=value)
        if not isinstance(value, dict):
            raise FieldError(key, f"takes a mapping of fields, got {shown(value)}")
        return ACTIONS[key].model_validate(value)
    except ValidationError as e:
        raise pydantic_problems(e, key) from None
