"""The files tests/suite_order.py runs first exist: a renamed file would silently lose its place (and the suite its
balance across the two workers)."""

from __future__ import annotations

from pathlib import Path

from suite_order import FIRST_FILES

TESTS = Path(__file__).resolve().parents[1]


def test_every_file_run_first_exists():
    assert [name for name in FIRST_FILES if not (TESTS / name).is_file()] == []
    assert len(set(FIRST_FILES)) == len(FIRST_FILES)
