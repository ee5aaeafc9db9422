"""The shipped model, which the lessons are written for: loaded once per file (engines never modify weights)."""

from __future__ import annotations

import pytest

from pykv.engine.model.loader import load_model


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny", "cpu", "float32")
