"""Lessons: Markdown files with YAML front matter that walk a workshop through the engine, step by
step, with actions on a live engine and checks of what it did. No Streamlit here.

The names below load lazily: loading and validating a lesson file never imports the engine; playing
one (``LessonPlayer``) does.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CheckResult": "pykv.lessons.values.checks",
    "LessonError": "pykv.lessons.format.errors",
    "PathError": "pykv.lessons.format.errors",
    "load_course": "pykv.lessons.course.loader",
    "load_lesson": "pykv.lessons.course.loader",
    "parse_lesson": "pykv.lessons.course.loader",
    "Scope": "pykv.lessons.values.paths",
    "resolve": "pykv.lessons.values.paths",
    "LessonPlayer": "pykv.lessons.run.player",
    "StepState": "pykv.lessons.run.player",
    "replay": "pykv.lessons.run.player",
    "Prediction": "pykv.lessons.format.predict",
    "PredictionResult": "pykv.lessons.format.predict",
    "RunSummary": "pykv.lessons.values.run_summary",
    "Lesson": "pykv.lessons.format.schema",
    "LessonStep": "pykv.lessons.format.schema",
    "Check": "pykv.lessons.format.step_blocks",
    "TokenDiff": "pykv.lessons.values.tokens",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pykv.lessons' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
