"""The course as this server reads it: every lessons/NN-*.md that loads, each parsed once per file version."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import streamlit as st

from pykv.lessons import Lesson, load_lesson
from pykv.lessons.loader import read_course

LESSONS_DIR: Optional[Path] = None  # None: the repo's lessons/ (tests point it elsewhere)

def course() -> tuple[list[Lesson], list[str]]:
    """Every lessons/NN-*.md that loads, in order, and a message per file that does not."""
    lessons, problems = read_course(LESSONS_DIR, load=_load_current)
    return lessons, [str(e) for e in problems]  # "<file>: <field>: <problem>"


def _load_current(path: Path) -> Lesson:
    try:
        version = path.stat().st_mtime_ns
    except OSError:  # removed since the listing: load_lesson says so
        return load_lesson(path)
    return _load(str(path), version)


@st.cache_resource(max_entries=256, show_spinner=False)
def _load(path: str, mtime_ns: int) -> Lesson:
    """Parsed once per file version (a lesson edited on disk is parsed again); errors are not cached."""
    return load_lesson(Path(path))
