"""Lessons: Markdown files with YAML front matter that walk a workshop through the engine, step by
step, with actions on a live engine and checks of what it did. No Streamlit here.

The names below load lazily: loading and validating a lesson file never imports the engine; playing
one (``LessonPlayer``) does.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CheckResult": "pykv.lessons.checks",
    "LessonError": "pykv.lessons.errors",
    "PathError": "pykv.lessons.errors",
    "load_course": "pykv.lessons.loader",
    "load_lesson": "pykv.lessons.loader",
    "parse_lesson": "pykv.lessons.loader",
    "Scope": "pykv.lessons.paths",
    "resolve": "pykv.lessons.paths",
    "LessonPlayer": "pykv.lessons.player",
    "StepState": "pykv.lessons.player",
    "replay": "pykv.lessons.player",
    "Prediction": "pykv.lessons.predict",
    "PredictionResult": "pykv.lessons.predict",
    "RunSummary": "pykv.lessons.run_summary",
    "Lesson": "pykv.lessons.schema",
    "LessonStep": "pykv.lessons.schema",
    "Check": "pykv.lessons.step_blocks",
    "TokenDiff": "pykv.lessons.tokens",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pykv.lessons' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
