"""The course as this server reads it: every lessons/NN-*.md that loads, each parsed once per file version."""

from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from pykv.lessons.course.loader import load_lesson, read_course
from pykv.lessons.format.schema import Lesson

LESSONS_DIR: Path | None = None  # None: the repo's lessons/ (tests point it elsewhere)
# The folder is listed (a glob and a stat per file) at most this often per process. Every Lessons page run reads
# the course, and a class's followers all rerun at once when the instructor moves: each of those ~20 system calls
# gives up the GIL and waits its turn to take it back behind the other sessions' threads, so under a class's
# load the listing was half of a follower's page run by wall time (py-spy on bench/bench_class.py, 60 learners,
# 2026-12-03), though little CPU. A lesson edited on disk shows within RECHECK_S.
RECHECK_S = 2.0
_listed: dict[str, tuple[float, list[Lesson], list[str]]] = {}  # folder -> (listed at, lessons, problems)


def course() -> tuple[list[Lesson], list[str]]:
    """Every lessons/NN-*.md that loads, in order, and a message per file that does not."""
    folder, now = str(LESSONS_DIR or ""), time.monotonic()
    listed = _listed.get(folder)
    if listed is None or now - listed[0] > RECHECK_S:
        lessons, problems = read_course(LESSONS_DIR, load=_load_current)
        if len(_listed) >= 8:  # the tests' throwaway folders
            _listed.clear()
        listed = _listed[folder] = (now, lessons, [str(e) for e in problems])  # "<file>: <field>: <problem>"
    return list(listed[1]), list(listed[2])


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
