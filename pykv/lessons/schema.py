"""The lesson format as data: front matter, workload, steps, actions and checks (pydantic,
``extra="forbid"`` everywhere, so an unknown field is an error, never silently ignored).

A lesson file parses into::

    Lesson ── id, title, summary, seed, config (EngineConfig changes), workload (WorkloadSpec),
      │       objective, takeaway, minutes, core_minutes (the course list and the workshop path)
      └─ steps: [LessonStep ── title, narration, actions: [Action], expect: [Check], notes, predict,
                               optional, differs]

Actions and checks are written in YAML as one-key mappings (``- step: 3``) and operator mappings
(``- that: PATH`` + ``equals: VALUE``); ``parse_action`` / ``Check.parse`` turn them into the models
below and raise FieldError naming the field that is wrong.
"""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path
from typing import Any, ClassVar, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pykv.lessons.differs import Differs
from pykv.lessons.errors import FieldError
from pykv.lessons.exercise_block import Exercise
from pykv.lessons.limits import (
    MAX_ARRIVAL_STEP,
    MAX_LESSON_MINUTES,
    MAX_NAME_CHARS,
    MAX_OBJECTIVE_CHARS,
    MAX_PATH_CHARS,
    MAX_PROMPT_CHARS,
    MAX_PROMPT_TOKEN_IDS,
    MAX_REQUESTS,
    MAX_SEED,
    MAX_SUMMARY_CHARS,
    MAX_TAKEAWAY_CHARS,
    MAX_TITLE_CHARS,
    MAX_TOKENS,
    MAX_WHY_CHARS,
    PRESET_ARGS,
    clip,
    shown,
)
from pykv.lessons.predict import Prediction
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
        message = f"{shown(err['input'])} " + PATTERN_HINTS.get(err["ctx"]["pattern"], message)
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
            for name, value in self.args.items():
                if name not in takes:
                    raise FieldError(f"args.{clip(name, 40)}", f"preset {self.preset!r} takes no argument "
                                                               f"{shown(name)} (it takes {', '.join(takes)})")
                if isinstance(value, bool) or not isinstance(value, int):
                    raise FieldError(f"args.{name}", f"must be a whole number, got {shown(value)}")
                low, high = PRESET_ARGS.get(name, (0, MAX_STEPS))
                if name == "n" and value < low:
                    raise FieldError("args", f"preset {self.preset!r} rejects these args: these args give no "
                                             f"requests (n must be at least {low})")
                if not low <= value <= high:
                    raise FieldError(f"args.{name}", f"{name}={shown(value)} is out of a lesson's range: use {low} "
                                                     f"to {high}")
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
            _check_requests(self.requests)
            workload = Workload(name="lesson", seed=seed, requests=list(self.requests))
        order = sorted(range(len(workload.requests)), key=lambda i: workload.requests[i].arrival_step)
        named = list(workload.requests)
        for rank, i in enumerate(order):
            if named[i].request_id is None:
                named[i] = named[i].model_copy(update={"request_id": str(rank)})
        seen: set[str] = set()
        for i, r in enumerate(named):
            if not re.fullmatch(NAME, r.request_id) or len(r.request_id) > MAX_NAME_CHARS:
                raise FieldError(f"requests[{i}].request_id", f"{shown(r.request_id)} {PATTERN_HINTS[NAME]}, at "
                                                              f"most {MAX_NAME_CHARS} characters")
            if r.request_id in seen:
                raise FieldError(f"requests[{i}].request_id", f"request id {shown(r.request_id)} is used twice")
            seen.add(r.request_id)
        return workload.model_copy(update={"requests": named})


def _check_requests(requests: list[WorkloadRequest]) -> None:
    """A lesson's explicit requests within the lesson limits (a preset's args are checked before it runs)."""
    if len(requests) > MAX_REQUESTS:
        raise FieldError("requests", f"{len(requests)} requests; a lesson's workload has at most {MAX_REQUESTS}")
    for i, r in enumerate(requests):
        if r.max_tokens > MAX_TOKENS:
            raise FieldError(f"requests[{i}].max_tokens", f"{r.max_tokens} is above a lesson's limit of {MAX_TOKENS}")
        if r.prompt is not None and len(r.prompt) > MAX_PROMPT_CHARS:
            raise FieldError(f"requests[{i}].prompt", f"{len(r.prompt)} characters; at most {MAX_PROMPT_CHARS}")
        if r.prompt_token_ids is not None:
            if len(r.prompt_token_ids) > MAX_PROMPT_TOKEN_IDS:
                raise FieldError(f"requests[{i}].prompt_token_ids", f"{len(r.prompt_token_ids)} token ids; at most "
                                                                    f"{MAX_PROMPT_TOKEN_IDS}")
            if any(t < 0 or t >= 2**31 for t in r.prompt_token_ids):
                raise FieldError(f"requests[{i}].prompt_token_ids", "token ids are whole numbers from 0 to 2**31 - 1")
        if r.arrival_step > MAX_ARRIVAL_STEP:
            raise FieldError(f"requests[{i}].arrival_step", f"{r.arrival_step} is above a lesson's limit of "
                                                            f"{MAX_ARRIVAL_STEP}")


# ---- checks --------------------------------------------------------------------------------


class ValueOf(_Model):
    """An operand read from the state: ``{value_of: PATH, times: FACTOR}``."""

    value_of: str = Field(max_length=MAX_PATH_CHARS)
    times: Optional[float] = Field(default=None, allow_inf_nan=False)

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
            raise FieldError("", f"a check is a mapping like {{that: PATH, equals: VALUE}}, got {shown(raw)}")
        if "that" not in raw:
            raise FieldError("that", "missing: a check needs 'that: PATH' (what to look at)")
        if not isinstance(raw["that"], str) or not raw["that"] or len(raw["that"]) > MAX_PATH_CHARS:
            raise FieldError("that", f"must be a value path such as request.a.status (at most {MAX_PATH_CHARS} "
                                     f"characters), got {shown(raw['that'])}")
        ops = [k for k in raw if k in OPERATORS]
        for key in raw:
            if key not in OPERATORS and key not in ("that", "why"):
                raise FieldError(clip(str(key), 40), f"unknown operator {shown(key)}; use one of "
                                                     f"{', '.join(OPERATORS)}")
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
    request_id: str = Field(pattern=NAME, max_length=MAX_NAME_CHARS)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    max_tokens: int = Field(ge=1, le=MAX_TOKENS)
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
    name: str = Field(pattern=NAME, max_length=MAX_NAME_CHARS)
    config: dict[str, Any] = Field(default_factory=dict)
    workload: Optional[WorkloadSpec] = None

    def describe(self) -> str:
        changes = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"side run {self.name}" + (f" with {changes}" if changes else "")


class Tokenize(_Model):
    kind: ClassVar[str] = "tokenize"
    name: str = Field(pattern=NAME, max_length=MAX_NAME_CHARS)
    a: str = Field(max_length=MAX_PROMPT_CHARS)
    b: str = Field(max_length=MAX_PROMPT_CHARS)

    def describe(self) -> str:
        return f"tokenize {self.name}: {clip(repr(self.a), 100)} vs {clip(repr(self.b), 100)}"


Action = Union[StepAction, RunUntil, AddRequest, Configure, RunAction, Tokenize]
ACTIONS: dict[str, type] = {a.kind: a for a in (StepAction, RunUntil, AddRequest, Configure, RunAction, Tokenize)}


def parse_action(raw: Any) -> Action:
    """One ``- key: value`` item of an ``actions`` block; FieldError names the part that is wrong."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise FieldError("", f"an action is a mapping with exactly one key ({', '.join(ACTIONS)}), got {shown(raw)}")
    (key, value), = raw.items()
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
                raise FieldError(key, f"takes preemption, end or a check {{that: PATH, <op>: VALUE}}; got "
                                      f"{shown(value)}")
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


# ---- the lesson ----------------------------------------------------------------------------


class FrontMatter(_Model):
    id: str = Field(pattern=LESSON_ID, max_length=MAX_NAME_CHARS)
    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)
    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED, strict=True)
    config: dict[str, Any] = Field(default_factory=dict)
    workload: WorkloadSpec
    objective: Optional[str] = Field(default=None, min_length=1, max_length=MAX_OBJECTIVE_CHARS)  # shown at step 1
    takeaway: Optional[str] = Field(default=None, min_length=1, max_length=MAX_TAKEAWAY_CHARS)  # shown at the end
    minutes: Optional[int] = Field(default=None, ge=1, le=MAX_LESSON_MINUTES, strict=True)  # the whole lesson
    core_minutes: Optional[int] = Field(default=None, ge=1, le=MAX_LESSON_MINUTES, strict=True)  # its core steps

    @field_validator("objective", "takeaway")
    @classmethod
    def _one_line(cls, text: Optional[str]) -> Optional[str]:
        if text is None:
            return None
        if not text.strip():
            raise ValueError("is blank; write one sentence, or leave the field out")
        if "\n" in text.strip():
            raise ValueError("must be one line (a YAML string on one line, or a folded '>' block)")
        return text.strip()


# ```focus: the view a step's narration talks about. The tabs (block_tables ... log) open on it; the others are
# always on screen and are named above the views.
FOCUS_VIEWS = {"grid": "the block grid", "queues": "the queues", "this_step": "This step (narration and log lines)",
               "timeline": "the run timeline", "block_tables": "Block tables", "requests": "Requests",
               "costs": "Preemption costs", "log": "Log (all steps)"}


class LessonStep(_Model):
    title: str
    narration: str  # raw Markdown, {{ path }} templates unfilled
    actions: list[Action] = Field(default_factory=list)
    expect: list[Check] = Field(default_factory=list)
    notes: Optional[str] = None  # speaker notes: the speaker view, folded in the solo player; never projected
    predict: Optional[Prediction] = None  # asked before the actions run; answered by their outcome
    line: int = 0  # the line of its "## " heading in the file
    optional: bool = False  # "## Title {optional}": skipped by the workshop path (pykv.lessons.workshop)
    differs: Optional[Differs] = None  # claim / vLLM / pykv callout (pykv.lessons.differs)
    focus: Optional[str] = None  # the view the narration talks about (FOCUS_VIEWS): its tab opens, it is named
    exercise: Optional[Exercise] = None  # "Your turn": a task done in the Playground (pykv.lessons.exercise_block)


class Lesson(_Model):
    id: str
    title: str
    summary: str
    seed: int
    config: dict[str, Any]  # EngineConfig changes over the app's base config
    workload: WorkloadSpec
    steps: list[LessonStep]
    path: Path
    objective: Optional[str] = None
    takeaway: Optional[str] = None
    minutes: Optional[int] = None  # the whole lesson
    core_minutes: Optional[int] = None  # the core steps (None: as minutes, no step is optional)

    def build_workload(self) -> Workload:
        """The lesson's workload, seeded, every request named (see WorkloadSpec.build)."""
        return self.workload.build(self.seed)
