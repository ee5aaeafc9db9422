"""The lesson format as data: front matter, workload, steps, actions and checks (pydantic,
``extra="forbid"`` everywhere, so an unknown field is an error, never silently ignored).

A lesson file parses into::

    Lesson ── id, title, summary, seed, config (EngineConfig changes), workload (WorkloadSpec)
      └─ steps: [LessonStep ── title, narration, actions: [Action], expect: [Check], notes]

Actions and checks are written in YAML as one-key mappings (``- step: 3``) and operator mappings
(``- that: PATH`` + ``equals: VALUE``); ``parse_action`` / ``Check.parse`` turn them into the models
below and raise FieldError naming the field that is wrong.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, ClassVar, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pykv.lessons.errors import FieldError
from pykv.limits import MAX_STEPS
from pykv.workload import PRESETS, Workload, WorkloadRequest, make_workload

NAME = r"^[A-Za-z0-9_-]+$"  # request ids, run and tokenization names: no dots (they separate path segments)
LESSON_ID = r"^[a-z0-9]+(-[a-z0-9]+)*$"
PATTERN_HINTS = {
    NAME: "may hold only letters, digits, _ and - (no dots or spaces)",
    LESSON_ID: "is not a lesson id: use lowercase letters, digits and single dashes, like kv-cache-and-blocks",
}
OPERATORS = ("equals", "not_equals", "at_least", "at_most", "greater_than", "less_than", "contains", "not_contains",
             "is_none")
NUMERIC_OPERATORS = ("at_least", "at_most", "greater_than", "less_than")


class _Model(BaseModel):
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
        message = f"{err['input']!r} " + PATTERN_HINTS.get(err["ctx"]["pattern"], message)
    elif err["type"] == "missing":
        message = "missing (this field is required)"
    return FieldError(field, message)


# ---- workload ------------------------------------------------------------------------------


class WorkloadSpec(_Model):
    """Exactly one of ``preset`` (+ ``args``) or explicit ``requests``."""

    preset: Optional[str] = None
    args: dict[str, Any] = Field(default_factory=dict)
    requests: Optional[list[WorkloadRequest]] = None

    @model_validator(mode="after")
    def _one_source(self) -> "WorkloadSpec":
        if (self.preset is None) == (self.requests is None):
            raise ValueError("give exactly one of 'preset' (a pykv.workload preset) or 'requests' (a list)")
        if self.args and self.preset is None:
            raise ValueError("'args' go with 'preset'; explicit requests take none")
        if self.requests is not None and not self.requests:
            raise ValueError("'requests' is empty; give at least one request")
        return self

    def build(self, seed: int) -> Workload:
        """The Workload, every request named: explicit ids as written, the others "0", "1", ... in
        arrival order (the ids the engine would give them). FieldError on a bad preset, args or id."""
        if self.preset is not None:
            if self.preset not in PRESETS:
                raise FieldError("preset", f"unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}")
            takes = [p for p in inspect.signature(PRESETS[self.preset]).parameters if p != "seed"]
            for name in self.args:
                if name not in takes:
                    raise FieldError(f"args.{name}", f"preset {self.preset!r} takes no argument {name!r} "
                                                     f"(it takes {', '.join(takes)})")
            try:
                workload = make_workload(self.preset, seed=seed, **self.args)
            except ValidationError as e:
                problem = pydantic_problems(e)
                if problem.field == "requests":
                    problem = "these args give no requests (n must be at least 1)"
                raise FieldError("args", f"preset {self.preset!r} rejects these args: {problem}") from None
            except (TypeError, ValueError) as e:
                raise FieldError("args", str(e)) from None
        else:
            workload = Workload(name="lesson", seed=seed, requests=list(self.requests))
        order = sorted(range(len(workload.requests)), key=lambda i: workload.requests[i].arrival_step)
        named = list(workload.requests)
        for rank, i in enumerate(order):
            if named[i].request_id is None:
                named[i] = named[i].model_copy(update={"request_id": str(rank)})
        seen: set[str] = set()
        for i, r in enumerate(named):
            if not re.fullmatch(NAME, r.request_id):
                raise FieldError(f"requests[{i}].request_id", f"{r.request_id!r} {PATTERN_HINTS[NAME]}")
            if r.request_id in seen:
                raise FieldError(f"requests[{i}].request_id", f"request id {r.request_id!r} is used twice")
            seen.add(r.request_id)
        return workload.model_copy(update={"requests": named})


# ---- checks --------------------------------------------------------------------------------


class ValueOf(_Model):
    """An operand read from the state: ``{value_of: PATH, times: FACTOR}``."""

    value_of: str
    times: Optional[float] = None

    def describe(self) -> str:
        return self.value_of + (f" × {self.times:g}" if self.times is not None else "")


class Check(_Model):
    """``that: PATH`` compared by one operator with a literal or a ValueOf; ``why`` is shown beside it."""

    that: str
    op: str
    operand: Any = None
    why: Optional[str] = None

    @classmethod
    def parse(cls, raw: Any) -> "Check":
        if not isinstance(raw, dict):
            raise FieldError("", f"a check is a mapping like {{that: PATH, equals: VALUE}}, got {raw!r}")
        if "that" not in raw:
            raise FieldError("that", "missing: a check needs 'that: PATH' (what to look at)")
        if not isinstance(raw["that"], str) or not raw["that"]:
            raise FieldError("that", f"must be a value path such as request.a.status, got {raw['that']!r}")
        ops = [k for k in raw if k in OPERATORS]
        for key in raw:
            if key not in OPERATORS and key not in ("that", "why"):
                raise FieldError(str(key), f"unknown operator {key!r}; use one of {', '.join(OPERATORS)}")
        if len(ops) != 1:
            raise FieldError("that", f"a check takes exactly one operator ({', '.join(OPERATORS)}); got "
                                     f"{', '.join(ops) or 'none'}")
        op, operand = ops[0], raw[ops[0]]
        if isinstance(operand, dict):
            try:
                operand = ValueOf.model_validate(operand)
            except ValidationError as e:
                raise pydantic_problems(e, op) from None
            if op == "is_none":
                raise FieldError(op, "is_none takes true or false, not a value_of")
        elif op == "is_none" and not isinstance(operand, bool):
            raise FieldError(op, f"is_none takes true or false, got {operand!r}")
        elif op in NUMERIC_OPERATORS and (isinstance(operand, bool) or not isinstance(operand, (int, float))):
            raise FieldError(op, f"{op} compares numbers; got {operand!r}")
        why = raw.get("why")
        if why is not None and not isinstance(why, str):
            raise FieldError("why", f"must be text, got {why!r}")
        return cls(that=raw["that"], op=op, operand=operand, why=why)

    def describe(self) -> str:
        operand = self.operand.describe() if isinstance(self.operand, ValueOf) else repr(self.operand)
        return f"{self.that} {self.op.replace('_', ' ')} {operand}"


# ---- actions -------------------------------------------------------------------------------


class StepAction(_Model):
    kind: ClassVar[str] = "step"
    count: int = Field(ge=1, le=MAX_STEPS)

    def describe(self) -> str:
        return f"step {self.count}"


class RunUntil(_Model):
    kind: ClassVar[str] = "run_until"
    until: Union[Literal["preemption", "end"], Check]

    def describe(self) -> str:
        return f"run until {self.until.describe() if isinstance(self.until, Check) else self.until}"


class AddRequest(_Model):
    kind: ClassVar[str] = "add_request"
    request_id: str = Field(pattern=NAME)
    prompt: str = Field(min_length=1)
    max_tokens: int = Field(ge=1)
    ignore_eos: bool = False

    def describe(self) -> str:
        return f"add request {self.request_id} ({self.max_tokens} tokens max)"


class Configure(_Model):
    kind: ClassVar[str] = "configure"
    changes: dict[str, Any]

    def describe(self) -> str:
        return "configure " + ", ".join(f"{k}={v!r}" for k, v in self.changes.items())


class RunAction(_Model):
    kind: ClassVar[str] = "run"
    name: str = Field(pattern=NAME)
    config: dict[str, Any] = Field(default_factory=dict)
    workload: Optional[WorkloadSpec] = None

    def describe(self) -> str:
        changes = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"side run {self.name}" + (f" with {changes}" if changes else "")


class Tokenize(_Model):
    kind: ClassVar[str] = "tokenize"
    name: str = Field(pattern=NAME)
    a: str
    b: str

    def describe(self) -> str:
        return f"tokenize {self.name}: {self.a!r} vs {self.b!r}"


Action = Union[StepAction, RunUntil, AddRequest, Configure, RunAction, Tokenize]
ACTIONS: dict[str, type] = {a.kind: a for a in (StepAction, RunUntil, AddRequest, Configure, RunAction, Tokenize)}


def parse_action(raw: Any) -> Action:
    """One ``- key: value`` item of an ``actions`` block; FieldError names the part that is wrong."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise FieldError("", f"an action is a mapping with exactly one key ({', '.join(ACTIONS)}), got {raw!r}")
    (key, value), = raw.items()
    if key not in ACTIONS:
        raise FieldError(str(key), f"unknown action {key!r}; use one of {', '.join(ACTIONS)}")
    try:
        if key == "step":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS:
                raise FieldError(key, f"takes a number of engine steps (1 to {MAX_STEPS}), got {value!r}")
            return StepAction(count=value)
        if key == "run_until":
            if isinstance(value, dict):
                try:
                    return RunUntil(until=Check.parse(value))
                except FieldError as e:
                    raise FieldError(f"{key}.{e.field}" if e.field else key, e.problem) from None
            if value not in ("preemption", "end"):
                raise FieldError(key, f"takes preemption, end or a check {{that: PATH, <op>: VALUE}}; got {value!r}")
            return RunUntil(until=value)
        if key == "configure":
            if not isinstance(value, dict) or not value:
                raise FieldError(key, f"takes a mapping of EngineConfig fields to new values, got {value!r}")
            return Configure(changes=value)
        if not isinstance(value, dict):
            raise FieldError(key, f"takes a mapping of fields, got {value!r}")
        return ACTIONS[key].model_validate(value)
    except ValidationError as e:
        raise pydantic_problems(e, key) from None


# ---- the lesson ----------------------------------------------------------------------------


class FrontMatter(_Model):
    id: str = Field(pattern=LESSON_ID)
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    seed: int = 0
    config: dict[str, Any] = Field(default_factory=dict)
    workload: WorkloadSpec


class LessonStep(_Model):
    title: str
    narration: str  # raw Markdown, {{ path }} templates unfilled
    actions: list[Action] = Field(default_factory=list)
    expect: list[Check] = Field(default_factory=list)
    notes: Optional[str] = None  # speaker notes (Markdown), presenter mode only
    line: int = 0  # the line of its "## " heading in the file


class Lesson(_Model):
    id: str
    title: str
    summary: str
    seed: int
    config: dict[str, Any]  # EngineConfig changes over the app's base config
    workload: WorkloadSpec
    steps: list[LessonStep]
    path: Path

    def build_workload(self) -> Workload:
        """The lesson's workload, seeded, every request named (see WorkloadSpec.build)."""
        return self.workload.build(self.seed)
