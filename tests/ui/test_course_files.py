"""The app's course listing: read once per RECHECK_S per folder (every Lessons page run asks for it, a class's
followers all at once), and a lesson added or edited on disk shows after it."""

from __future__ import annotations

from pathlib import Path

from pykv.ui.session import course_files

LESSON = """---
id: {id}
title: {title}
summary: A lesson for the listing test.
config: {{num_gpu_blocks: 8}}
workload:
  requests:
    - {{request_id: a, prompt: "x", max_tokens: 2}}
---

## Only step

Nothing runs.
"""


def write(folder: Path, name: str, id_: str, title: str) -> None:
    (folder / name).write_text(LESSON.format(id=id_, title=title))


def test_the_course_is_listed_once_per_recheck_period_and_an_edit_shows_after_it(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(course_files.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(course_files, "LESSONS_DIR", tmp_path)
    write(tmp_path, "01-one.md", "one", "One")
    listings = []
    read = course_files.read_course
    monkeypatch.setattr(course_files, "read_course", lambda *a, **k: listings.append(1) or read(*a, **k))

    assert [lesson.title for lesson in course_files.course()[0]] == ["One"]
    write(tmp_path, "02-two.md", "two", "Two")
    clock[0] += course_files.RECHECK_S / 2
    assert [lesson.title for lesson in course_files.course()[0]] == ["One"] and len(listings) == 1

    clock[0] += course_files.RECHECK_S
    write(tmp_path, "01-one.md", "one", "One, edited")
    assert [lesson.title for lesson in course_files.course()[0]] == ["One, edited", "Two"] and len(listings) == 2


def test_a_caller_changing_its_list_does_not_change_the_next_callers(tmp_path, monkeypatch):
    monkeypatch.setattr(course_files, "LESSONS_DIR", tmp_path)
    write(tmp_path, "01-one.md", "one", "One")
    course_files.course()[0].clear()
    assert len(course_files.course()[0]) == 1
