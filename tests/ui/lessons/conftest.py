"""The Lessons page on the shipped model and course, which the lessons are written for."""

from __future__ import annotations

import pytest
from app_helpers import lessons_page
from streamlit.testing.v1 import AppTest


@pytest.fixture
def app(monkeypatch) -> AppTest:
    """The Lessons page on the shipped model (PYKV_MODEL unset); not run yet."""
    monkeypatch.delenv("PYKV_MODEL", raising=False)
    return AppTest.from_function(lessons_page, default_timeout=180)
