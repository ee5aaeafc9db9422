"""Lessons: Markdown files with YAML front matter that walk a workshop through the engine, step by
step, with actions on a live engine and checks of what it did (issue 7). No Streamlit here."""

from pykv.lessons.checks import CheckResult
from pykv.lessons.errors import LessonError, PathError
from pykv.lessons.loader import load_course, load_lesson, parse_lesson
from pykv.lessons.paths import Scope, resolve
from pykv.lessons.player import LessonPlayer, StepState, replay
from pykv.lessons.runs import RunSummary
from pykv.lessons.schema import Check, Lesson, LessonStep
from pykv.lessons.tokens import TokenDiff

__all__ = [
    "Check", "CheckResult", "Lesson", "LessonError", "LessonPlayer", "LessonStep", "PathError", "RunSummary", "Scope",
    "StepState", "TokenDiff", "load_course", "load_lesson", "parse_lesson", "replay", "resolve",
]
