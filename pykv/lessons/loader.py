"""Loading lesson files: parse (front matter, steps, YAML blocks), then check everything that can
be checked before anything runs (config, workload, request ids, paths, filters). Every problem is a
LessonError naming the file and the field — ``lessons/03-x.md: steps[2] (Title).expect[0].that: ...``
— never a traceback.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import ValidationError

from pykv.config import ConfigError, EngineConfig, knob_named, knobs
from pykv.lessons.checks import template_paths
from pykv.lessons.errors import FieldError, LessonError
from pykv.lessons.markdown import RawStep, split_front_matter, split_steps
from pykv.lessons.paths import Known, check_path
from pykv.lessons.schema import (
    AddRequest,
    Check,
    Configure,
    FrontMatter,
    Lesson,
    LessonStep,
    RunAction,
    RunUntil,
    Tokenize,
    ValueOf,
    parse_action,
    pydantic_problems,
)

COURSE_DIR = Path(__file__).resolve().parents[2] / "lessons"
COURSE_GLOB = "[0-9][0-9]-*.md"
class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping (YAML would keep the last silently)."""


def _mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is written twice",
                                                    key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def parse_yaml(text: str, field: str, first_line: int) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {first_line + mark.line}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise FieldError(field, f"not valid YAML: {problem}{where}") from None


def display_path(path: Path) -> str:
    """The path as a reader knows it: relative to the working directory or the repo when inside them."""
    resolved = path.resolve()
    for base in (Path.cwd(), COURSE_DIR.parent):
        try:
            return str(resolved.relative_to(base.resolve()))
        except ValueError:
            continue
    return str(path)


# ---- static checks ------------------------------------------------------------------------------


def check_config(changes: dict, base: dict, where: str) -> dict:
    """``base`` with ``changes`` applied, as EngineConfig accepts it; FieldError ``where.FIELD`` if not.
    Which knobs a lesson may set, and why not the others, is EngineConfig's table."""
    allowed = {k.name: k for k in knobs("lesson")}
    for key in changes:
        if key not in allowed:
            reason = knob_named(key).not_in_lessons if key in EngineConfig.model_fields else None
            raise FieldError(f"{where}.{key}", f"not set by a lesson: {reason}" if reason else
                             f"unknown EngineConfig field; use one of {', '.join(allowed)}")
    merged = {**base, **changes}
    try:
        EngineConfig(**merged)
    except ConfigError as e:
        raise FieldError(f"{where}.{e.field}" if e.field else where, str(e)) from None
    return merged


def _check_operand_paths(check: Check, known: Known, where: str) -> None:
    for path, field in [(check.that, f"{where}.that")] + (
            [(check.operand.value_of, f"{where}.{check.op}.value_of")] if isinstance(check.operand, ValueOf) else []):
        try:
            check_path(path, known)
        except FieldError as e:
            raise FieldError(field, e.problem) from None


class _Course:
    """The static walk through one lesson: what is defined at each point."""

    def __init__(self, front: FrontMatter) -> None:
        self.seed = front.seed
        self.config = check_config(front.config, {}, "config")
        try:
            workload = front.workload.build(front.seed)
        except FieldError as e:
            raise FieldError(f"workload.{e.field}", e.problem) from None
        self.known = Known(requests=frozenset(r.request_id for r in workload.requests))

    def action(self, action: Any, where: str) -> None:
        if isinstance(action, AddRequest):
            if action.request_id in self.known.requests:
                raise FieldError(f"{where}.add_request.request_id",
                                 f"request id {action.request_id!r} is already used (by the workload or an earlier "
                                 "add_request); pick another")
            self.known = dataclasses.replace(self.known, requests=self.known.requests | {action.request_id})
        elif isinstance(action, Configure):
            self.config = check_config(action.changes, self.config, f"{where}.configure")
        elif isinstance(action, RunAction):
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
        actions, expect = [], []
        for name, parse, into in (("actions", parse_action, actions), ("expect", Check.parse, expect)):
            if name not in raw.blocks:
                continue
            text, line = raw.blocks[name]
            items = parse_yaml(text, f"{where}.{name}", line)
            if not isinstance(items, list):
                raise FieldError(f"{where}.{name}", f"must be a YAML list ('- ...' items), got {type(items).__name__}")
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
                check_path(path, self.known)
        except FieldError as e:
            raise FieldError(f"{where}.narration", e.problem) from None
        notes = raw.blocks["notes"][0].strip() if "notes" in raw.blocks else None
        return LessonStep(title=raw.title, narration=raw.narration, actions=actions, expect=expect, notes=notes,
                          line=raw.line)


# ---- entry points -------------------------------------------------------------------------------


def parse_lesson(text: str, path: Path | str = "<lesson>") -> Lesson:
    """A lesson from its text; ``path`` is only used in messages and kept on the Lesson."""
    path = Path(path)
    shown = display_path(path) if str(path) != "<lesson>" else str(path)
    try:
        head, body, body_line = split_front_matter(text)
        raw = parse_yaml(head, "front matter", 2)
        if not isinstance(raw, dict):
            raise FieldError("front matter", "must be a YAML mapping (id: ..., title: ..., ...)")
        try:
            front = FrontMatter.model_validate(raw)
        except ValidationError as e:
            problem = pydantic_problems(e)
            if problem.problem == "unknown field" and "." not in problem.field:
                fields = ", ".join(FrontMatter.model_fields)
                problem = FieldError(problem.field, f"unknown field; the front matter takes {fields}")
            raise problem from None
        course = _Course(front)
        steps = [course.step(raw_step, i) for i, raw_step in enumerate(split_steps(body, body_line))]
    except FieldError as e:
        raise LessonError(shown, e.field, e.problem) from None
    return Lesson(id=front.id, title=front.title, summary=front.summary, seed=front.seed, config=front.config,
                  workload=front.workload, steps=steps, path=path)


def load_lesson(path: Path | str) -> Lesson:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LessonError(str(path), "", "no such lesson file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise LessonError(str(path), "", f"cannot be read as UTF-8 text ({e})") from None
    return parse_lesson(text, path)


def lesson_files(directory: Path | str | None = None) -> list[Path]:
    return sorted(Path(directory or COURSE_DIR).glob(COURSE_GLOB))


def read_course(directory: Path | str | None = None,
                load: Callable[[Path], Lesson] = load_lesson) -> tuple[list[Lesson], list[LessonError]]:
    """Every ``NN-*.md`` lesson of ``directory`` (the repo's ``lessons/`` by default) that loads, in
    file order, and one LessonError per file that does not (malformed, unreadable, or an id already
    taken), so a course list can show the rest. ``load`` reads one file (the app passes a cached one)."""
    lessons: list[Lesson] = []
    problems: list[LessonError] = []
    for path in lesson_files(directory):
        try:
            lesson = load(path)
        except LessonError as e:
            problems.append(e)
            continue
        twin = next((other for other in lessons if other.id == lesson.id), None)
        if twin is not None:
            problems.append(LessonError(display_path(path), "id", f"{lesson.id!r} is already the id of "
                                        f"{display_path(twin.path)}; ids must be unique in the course"))
            continue
        lessons.append(lesson)
    return lessons, problems


def load_course(directory: Path | str | None = None) -> list[Lesson]:
    """Every lesson of the course, in file order; LessonError on the first file that does not load."""
    lessons, problems = read_course(directory)
    if problems:
        raise problems[0]
    return lessons
