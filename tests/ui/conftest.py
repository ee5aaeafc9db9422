"""The pages through AppTest: the app on the random checkpoint, a course of the test's own lessons, the Lessons
page on one. (tests/ui/lessons/conftest.py opens the Lessons page on the shipped course instead.)"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from app_helpers import APP, lessons_page, server_page
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from testkit.streamlit_server import TEST_ENV

for _name, _value in TEST_ENV.items():  # before any test builds the process's class registry (a cached resource)
    os.environ.setdefault(_name, _value)

SMALL_LESSON = """---
id: small
title: Small lesson
summary: A two-step lesson made for these tests.
seed: 0
config: {num_gpu_blocks: 16, block_size: 4, max_num_seqs: 4}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 4, ignore_eos: true}
---

## First

One engine step.

```actions
- step: 1
```

## Second

One more.

```actions
- step: 1
```
"""


@pytest.fixture
def app(random_llama_path, monkeypatch) -> AppTest:
    """The whole app (the Playground first) on the random checkpoint; not run yet."""
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    return AppTest.from_file(APP, default_timeout=120)


@pytest.fixture
def server_app(random_llama_path, monkeypatch) -> AppTest:
    """The Your server page alone on the random checkpoint; not run yet."""
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    return AppTest.from_function(server_page, default_timeout=180)


@pytest.fixture
def course_folder(tmp_path, monkeypatch) -> Callable[..., Path]:
    """``course_folder(("01-x.md", text), ...)``: a course of these lesson files, listed by the app instead of
    lessons/."""
    from pykv.ui.session import course_files

    def make(*files: tuple[str, str]) -> Path:
        folder = tmp_path / "course"
        folder.mkdir()
        for name, text in files:
            (folder / name).write_text(text)
        monkeypatch.setattr(course_files, "LESSONS_DIR", folder)
        return folder

    return make


@pytest.fixture
def lessons_app(random_llama_path, monkeypatch, course_folder) -> AppTest:
    """The Lessons page on the random checkpoint, its course one small two-step lesson (id ``small``)."""
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    course_folder(("01-small.md", SMALL_LESSON))
    return AppTest.from_function(lessons_page, default_timeout=120)


@pytest.fixture
def deferred(monkeypatch) -> dict:
    """element key -> (the callable a download button runs when clicked, its file name, its mimetype), filled as
    pages run: AppTest cannot click a download button, so the callables are caught where Streamlit files them."""
    made: dict = {}
    original = MediaFileManager.add_deferred

    def add_deferred(self, data_callable, mimetype, coordinates, file_name=None, element_id=""):
        made[element_id.rsplit("-", 1)[-1]] = (data_callable, file_name, mimetype)
        return original(self, data_callable, mimetype, coordinates, file_name=file_name, element_id=element_id)

    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return made
