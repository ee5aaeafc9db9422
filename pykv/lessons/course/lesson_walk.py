"""The static walk through one lesson, step by step: each step's blocks parsed (actions, expect,
predict, differs, focus, exercise) and everything that can be checked before anything runs checked
against what is defined at that point — config, workload, request ids, side runs, value paths.
Problems are FieldErrors naming the field (``steps[2] (Title).expect[0].that``); the loader adds the file.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pykv.border.config import ConfigError, EngineConfig, knob_named, knobs
from pykv.lessons.format.differs import Differs, parse_differs
from pykv.lessons.format.errors import FieldError
from pykv.lessons.format.exercise_block import Exercise, parse_exercise
from pykv.lessons.format.limits import (
    CONFIG_CAPS,
    MAX_ACTIONS_PER_STEP,
    MAX_CHECKS_PER_STEP,
    MAX_NARRATION_CHARS,
    MAX_NOTES_CHARS,
    MAX_PATH_CHARS,
    MAX_REQUESTS,
    MAX_SIDE_RUNS,
    clip,
    shown,
)
from pykv.lessons.format.markdown import RawStep
from pykv.lessons.format.predict import Prediction, parse_prediction
from pykv.lessons.format.safe_yaml import YamlBudget, parse_yaml
from pykv.lessons.format.schema import FOCUS_VIEWS, FrontMatter, LessonStep
from pykv.lessons.format.step_blocks import (
    AddRequest,
    Check,
    Configure,
    RunAction,
    RunUntil,
    Tokenize,
    ValueOf,
    parse_action,
)
from pykv.lessons.format.workload_spec import WorkloadSpec
from pykv.lessons.values.checks import template_paths
from pykv.lessons.values.path_checks import Known
from pykv.lessons.values.paths import check_path


def check_config(changes: dict, base: dict, where: str) -> dict:
    """``base`` with ``changes`` applied, as EngineConfig accepts it; FieldError ``where.FIELD`` if not.
    Which knobs a lesson may set, and why not the others, is EngineConfig's table."""
    allowed = {k.name: k for k in knobs("lesson")}
    for key in changes:
        if key not in allowed:
            reason = knob_named(key).not_in_lessons if key in EngineConfig.model_fields else None
            raise FieldError(
                f"{where}.{key}",
                f"not set by a lesson: {reason}"
                if reason
                else f"unknown EngineConfig field; use one of {', '.join(allowed)}",
            )
    for key, value in changes.items():
        if isinstance(value, int) and abs(value) > 2**63:
            raise FieldError(f"{where}.{key}", f"{shown(value)} is far too large for {key}")
        most = allowed[key].maximum if allowed[key].maximum is not None else CONFIG_CAPS.get(key)
        if most is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and value > most:
            raise FieldError(
                f"{where}.{key}",
                f"{key}={shown(value)} is above the app's limit of {most:g}; "
                f"lessons run in the app, so use at most {most:g}",
            )
    merged = {**base, **changes}
    try:
        EngineConfig(**merged)
    except ConfigError as e:
        raise FieldError(f"{where}.{e.field}" if e.field else where, str(e)) from None
    return merged


def _check_operand_paths(check: Check, known: Known, where: str) -> None:
    for path, field in [(check.that, f"{where}.that")] + (
        [(check.operand.value_of, f"{where}.{check.op}.value_of")] if isinstance(check.operand, ValueOf) else []
    ):
        try:
            check_path(path, known)
        except FieldError as e:
            raise FieldError(field, e.problem) from None


class LessonWalk:
    """The static walk through one lesson: what is defined at each point."""

    def __init__(self, front: FrontMatter, budget: YamlBudget) -> None:
        self.seed, self.budget, self.side_runs = front.seed, budget, 0
        self.config = check_config(front.config, {}, "config")
        try:
            workload = front.workload.build(front.seed)
        except FieldError as e:
            raise FieldError(f"workload.{e.field}", e.problem) from None
        self.known = Known(requests=frozenset(r.request_id for r in workload.requests if r.request_id is not None))
        self.workload_ids = self.known.requests  # what an exercise on the lesson's workload may name

    def action(self, action: Any, where: str) -> None:
        if isinstance(action, AddRequest):
            if action.request_id in self.known.requests:
                raise FieldError(
                    f"{where}.add_request.request_id",
                    f"request id {action.request_id!r} is already used (by the workload or an earlier "
                    "add_request); pick another",
                )
            if len(self.known.requests) >= MAX_REQUESTS:
                raise FieldError(
                    f"{where}.add_request",
                    f"a lesson has at most {MAX_REQUESTS} requests in all (its workload and every add_request)",
                )
            self.known = dataclasses.replace(self.known, requests=self.known.requests | {action.request_id})
        elif isinstance(action, Configure):
            self.config = check_config(action.changes, self.config, f"{where}.configure")
        elif isinstance(action, RunAction):
            self.side_runs += 1
            if self.side_runs > MAX_SIDE_RUNS:
                raise FieldError(
                    f"{where}.run",
                    f"a lesson has at most {MAX_SIDE_RUNS} run actions (each runs a workload to the end)",
                )
            check_config(action.config, self.config, f"{where}.run.config")
            if action.workload is not None:
                try:
                    action.workload.build(self.seed)
                except FieldError as e:
                    raise FieldError(f"{where}.run.workload.{e.field}", e.problem) from None
            self.known = dataclasses.replace(self.known, runs=self.known.runs | {action.name})
        elif isinstance(action, Tokenize):
            self.known = dataclasses.replace(self.known, tokens=self.known.tokens | {action.name})
        elif isinstance(action, RunUntil) and isinstance(action.until, Check):
            _check_operand_paths(action.until, self.known, f"{where}.run_until")

    def step(self, raw: RawStep, index: int) -> LessonStep:
        where = f"steps[{index}] ({raw.title})"
        if not raw.narration:
            raise FieldError(f"{where}.narration", "missing: write some narration under the step heading")
        if len(raw.narration) > MAX_NARRATION_CHARS:
            raise FieldError(
                f"{where}.narration",
                f"{len(raw.narration)} characters; a step's narration has at most "
                f"{MAX_NARRATION_CHARS} (split the step)",
            )
        if "notes" in raw.blocks and len(raw.blocks["notes"][0]) > MAX_NOTES_CHARS:
            raise FieldError(f"{where}.notes", f"{len(raw.blocks['notes'][0])} characters; at most {MAX_NOTES_CHARS}")
        actions: list[Any] = []  # the loop below fills both: actions with Actions, expect with Checks
        expect: list[Any] = []
        for name, parse, into in (("actions", parse_action, actions), ("expect", Check.parse, expect)):
            if name not in raw.blocks:
                continue
            text, line = raw.blocks[name]
            items = parse_yaml(text, f"{where}.{name}", line, self.budget)
            if not isinstance(items, list):
                raise FieldError(f"{where}.{name}", f"must be a YAML list ('- ...' items), got {type(items).__name__}")
            most = MAX_ACTIONS_PER_STEP if name == "actions" else MAX_CHECKS_PER_STEP
            if len(items) > most:
                raise FieldError(f"{where}.{name}", f"{len(items)} items; a step has at most {most} (split the step)")
            for j, item in enumerate(items):
                try:
                    into.append(parse(item))
                except FieldError as e:
                    raise FieldError(f"{where}.{name}[{j}]" + (f".{e.field}" if e.field else ""), e.problem) from None
                if name == "actions":
                    self.action(actions[-1], f"{where}.actions[{j}]")
        for k, check in enumerate(expect):
            _check_operand_paths(check, self.known, f"{where}.expect[{k}]")
        try:
            for path, _ in template_paths(raw.narration):
                if len(path) > MAX_PATH_CHARS:
                    raise FieldError(
                        "", f"a {{{{ }}}} template's path has {len(path)} characters; at most {MAX_PATH_CHARS}"
                    )
                check_path(path, self.known)
        except FieldError as e:
            raise FieldError(f"{where}.narration", e.problem) from None
        notes = raw.blocks["notes"][0].strip() if "notes" in raw.blocks else None
        return LessonStep(
            title=raw.title,
            narration=raw.narration,
            actions=actions,
            expect=expect,
            notes=notes,
            predict=self.prediction(raw, where),
            line=raw.line,
            optional=raw.optional,
            differs=self.differs(raw, where),
            focus=self.focus(raw, where),
            exercise=self.exercise(raw, where),
        )

    @staticmethod
    def focus(raw: RawStep, where: str) -> str | None:
        """The step's ```focus block: one view name of FOCUS_VIEWS."""
        if "focus" not in raw.blocks:
            return None
        name = raw.blocks["focus"][0].strip()
        if name not in FOCUS_VIEWS:
            raise FieldError(f"{where}.focus", f"{clip(name, 40)!r} is no view; one of {', '.join(FOCUS_VIEWS)}")
        return name

    def differs(self, raw: RawStep, where: str) -> Differs | None:
        """The step's ```differs callout (claim / vLLM / pykv), if it has one."""
        if "differs" not in raw.blocks:
            return None
        text, line = raw.blocks["differs"]
        try:
            return parse_differs(parse_yaml(text, "", line, self.budget))
        except FieldError as e:
            raise FieldError(f"{where}.differs" + (f".{e.field}" if e.field else ""), e.problem) from None

    def exercise(self, raw: RawStep, where: str) -> Exercise | None:
        """The step's ```exercise block, its ``solved`` paths checked against what the learner's Playground
        runs: the link's preset (seed 0, as the Playground's) or the lesson's own workload."""
        if "exercise" not in raw.blocks:
            return None
        text, line = raw.blocks["exercise"]
        try:
            exercise = parse_exercise(parse_yaml(text, "", line, self.budget), Check.parse)
            preset = exercise.link.preset
            ids = (
                self.workload_ids
                if exercise.link.lesson_workload
                else frozenset(
                    r.request_id for r in WorkloadSpec(preset=preset).build(0).requests if r.request_id is not None
                )
            )
            for k, check in enumerate(exercise.solved):
                _check_operand_paths(check, Known(requests=ids), f"solved[{k}]")
        except FieldError as e:
            raise FieldError(f"{where}.exercise" + (f".{e.field}" if e.field else ""), e.problem) from None
        return exercise

    def prediction(self, raw: RawStep, where: str) -> Prediction | None:
        """The step's ```predict block, its answer path checked as after the step's actions (as expect's)."""
        if "predict" not in raw.blocks:
            return None
        text, line = raw.blocks["predict"]
        try:
            prediction = parse_prediction(parse_yaml(text, "", line, self.budget))
            try:
                check_path(prediction.answer, self.known)
            except FieldError as e:
                raise FieldError("answer", e.problem) from None
        except FieldError as e:
            raise FieldError(f"{where}.predict" + (f".{e.field}" if e.field else ""), e.problem) from None
        return prediction
