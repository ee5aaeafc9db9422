"""The course list's minutes, objectives and two paths; the player on the workshop path (?path=core: Next
skips {optional} steps, the lesson ends at its last core step with its takeaway); the cheat sheet
(?cheatsheet=1) and its download. Through streamlit.testing.v1.AppTest, on the shipped model."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import ok, step_line
from streamlit.testing.v1 import AppTest

from pykv.lessons.course.loader import read_course
from pykv.lessons.course.workshop import course_minutes

LESSON = """---
id: paths
title: Two paths
summary: A four-step lesson made for the tests.
objective: Walk a lesson on either path.
takeaway: The workshop path skips what only deepens.
minutes: 8
core_minutes: 4
config: {num_gpu_blocks: 16, block_size: 4, max_num_seqs: 4}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}
---

## Core one

One engine step.

```actions
- step: 1
```

## Deeper {optional}

Engine step {{ engine.step }}.

```actions
- step: 1
```

```differs
claim: "The claim."
vllm: What vLLM does.
pykv: What pykv does.
versions: 0.33.0
```

## Core two

Engine step {{ engine.step }}.

```actions
- step: 1
```

## Deepest {optional}

Engine step {{ engine.step }}.
"""


@pytest.fixture
def small_course(course_folder) -> Path:
    return course_folder(("01-paths.md", LESSON))


def step_on_screen(at: AppTest) -> int:
    return step_line(at)[0]


def open_link(at: AppTest, **params: str) -> AppTest:
    for key, value in params.items():
        at.query_params[key] = value
    return ok(at.run())


def param(at: AppTest, key: str):
    value = at.query_params.get(key)
    return value[0] if isinstance(value, list) else value


def test_the_course_list_shows_minutes_objectives_both_paths_and_the_cheat_sheet(app):
    lessons, _ = read_course()
    ok(app.run())
    cards = [m.value for m in app.markdown if m.value.startswith("**")]
    for n, lesson in enumerate(lessons, 1):
        card = next(c for c in cards if c.startswith(f"**{n}. {lesson.title}**"))
        if lesson.minutes is not None:
            assert f"{lesson.minutes} min" in card and lesson.objective in card, card
    chooser = app.get("button_group")[0]
    labels = " ".join(chooser.proto.options[i].content for i in range(len(chooser.proto.options)))
    assert f"{course_minutes(lessons, 'core')} min" in labels and f"{course_minutes(lessons, 'full')} min" in labels
    assert app.button(key="cheatsheet_open").label == "Cheat sheet"


def test_the_cheat_sheet_renders_and_offers_its_download(app):
    open_link(app, cheatsheet="1")
    assert not app.error
    html = [h.proto.body for h in app.get("html") if "cheat sheet" in h.proto.body]
    assert html and "<script" not in html[0] and "tuning-in-order" in html[0]
    download = app.get("download_button")
    assert download and download[0].proto.label == "Download to print"
    app.button(key="cheatsheet_close").click().run()
    assert "cheatsheet" not in ok(app).query_params and app.button(key="cheatsheet_open")
    app.button(key="cheatsheet_open").click().run()
    assert param(ok(app), "cheatsheet") == "1" and app.get("download_button")


def test_the_cheat_sheets_links_open_the_public_address_when_the_host_set_one(app, monkeypatch):
    monkeypatch.setenv("PYKV_PUBLIC_URL", "https://lab.example.org/")
    open_link(app, cheatsheet="1")
    html = next(h.proto.body for h in app.get("html") if "cheat sheet" in h.proto.body)
    assert 'href="https://lab.example.org/lessons?' in html and "localhost" not in html


def test_the_workshop_path_skips_optional_steps_and_ends_with_the_takeaway(app, small_course):
    open_link(app, lesson="paths", step="1", path="core")
    assert step_on_screen(app) == 1 and any("Walk a lesson on either path." in i.value for i in app.info)
    assert not app.success and "optional" in app.button(key="lesson_dot_2").help
    assert not any(m.value.startswith(":gray-badge[") for m in app.markdown)  # step 1 is core
    app.button(key="lesson_next").click().run()
    assert step_on_screen(ok(app)) == 3 and param(app, "path") == "core"  # the optional step 2 was skipped
    assert not any("Walk a lesson" in i.value for i in app.info)  # the objective belongs to step 1
    assert app.button(key="lesson_next").disabled  # step 4 is optional: the core path ends here
    end = next(s.value for s in app.success)
    assert "End of the lesson" in end and "The workshop path skips what only deepens." in end and "2 optional" in end
    app.button(key="lesson_prev").click().run()
    assert step_on_screen(ok(app)) == 1
    app.button(key="lesson_dot_2").click().run()  # the dots still open an optional step
    assert step_on_screen(ok(app)) == 2 and "The claim." in " ".join(m.value for m in app.markdown)
    assert any(m.value.startswith(":gray-badge[") and "optional" in m.value for m in app.markdown)  # by the title
    app.button(key="lesson_home").click().run()
    assert param(ok(app), "path") == "core" and "lesson" not in app.query_params  # the course list keeps the path


def test_a_lessons_last_step_opens_the_next_lesson_on_the_projector_too(app, course_folder):
    second = LESSON.replace("id: paths", "id: second").replace("title: Two paths", "title: The second one")
    course_folder(("01-paths.md", LESSON), ("02-second.md", second))
    open_link(app, lesson="paths", step="3", path="core", presenter="1")  # the workshop path's last step of lesson 1
    following = app.button(key="lesson_next")
    assert following.label == "Next lesson" and not following.disabled and "The second one" in following.help
    following.click().run()
    assert (param(ok(app), "lesson"), step_on_screen(app)) == ("second", 1)
    assert param(app, "presenter") == "1" and param(app, "path") == "core"  # still the projector, the same path
    open_link(app, step="3")  # the course's last lesson ends: nothing follows
    assert app.button(key="lesson_next").label == "Next" and app.button(key="lesson_next").disabled
    app.query_params.pop("presenter")
    assert "the course's last lesson" in next(s.value for s in open_link(app, step="3").success)  # not projected
    open_link(app, lesson="paths", step="3")
    assert "**Next lesson** opens “The second one”" in next(s.value for s in app.success)


def test_the_full_course_plays_every_step_and_a_bad_path_says_so(app, small_course):
    open_link(app, lesson="paths", step="1", path="fast")
    assert any("'fast' is not a path" in w.value for w in app.warning)
    app.button(key="lesson_next").click().run()
    assert step_on_screen(ok(app)) == 2 and "path" not in app.query_params
    app.button(key="lesson_dot_4").click().run()
    assert step_on_screen(ok(app)) == 4 and app.button(key="lesson_next").disabled
    assert "End of the lesson." in next(s.value for s in app.success)
