""" "Your turn" in the app (streamlit.testing.v1.AppTest, the shipped model): the lesson player's box and link,
the Playground's panel (task, hint ladder, Check my answer) on a preset and on a lesson's own workload, and a
bad ``exercise=`` value."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from app_helpers import APP, ok
from streamlit.testing.v1 import AppTest

from pykv.lessons import load_course
from pykv.lessons.run.exercises import exercise_ref

COURSE = load_course()
BY_ID = {lesson.id: lesson for lesson in COURSE}


@pytest.fixture
def app(monkeypatch) -> AppTest:
    """The whole app on the shipped model (not the random checkpoint of tests/ui/conftest.py's)."""
    monkeypatch.delenv("PYKV_MODEL", raising=False)  # the shipped model the exercises are written for
    return AppTest.from_file(APP, default_timeout=120)


def first(lesson_id: str) -> tuple[int, object]:
    lesson = BY_ID[lesson_id]
    return next((i, s.exercise) for i, s in enumerate(lesson.steps) if s.exercise is not None)


def open_playground(at: AppTest, query: str, ref: str) -> AppTest:
    for key, value in parse_qsl(query):
        at.query_params[key] = value
    at.query_params["exercise"] = ref
    return ok(at.run())


def panel_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown) + "\n".join(e.value for e in [*at.success, *at.warning, *at.info])


def param(at: AppTest, key: str) -> str:
    value = at.query_params[key]
    return value[0] if isinstance(value, list) else value


def test_the_panel_shows_the_task_reveals_hints_one_by_one_and_checks_a_preset_exercise(app):
    index, exercise = first("what-triggers-preemption")
    ref = exercise_ref(BY_ID["what-triggers-preemption"], index)
    open_playground(app, exercise.link.playground_query(), ref)
    assert exercise.task in panel_text(app)
    assert app.session_state["lab"].preset == "storm" and param(app, "exercise") == ref  # the URL keeps it
    assert not any(i.value.startswith("Hint") for i in app.info)
    app.button(key="exercise_hint").click().run()
    assert [i.value for i in ok(app).info if i.value.startswith("Hint")] == [f"Hint 1: {exercise.hints[0]}"]
    app.button(key="exercise_check").click().run()
    assert any(w.value.startswith("Not yet") for w in ok(app).warning)
    assert ":red[✗] every request has finished (run to the end)" in panel_text(app)
    app.button(key="run_end").click().run()
    app.button(key="exercise_check").click().run()
    text = panel_text(ok(app))
    assert ":green[✓] every request has finished" in text and ":red[✗] not a single preemption — now 2" in text


def test_a_lesson_workload_exercise_runs_the_lessons_own_requests_and_its_solution_is_solved(app):
    lesson = BY_ID["reference-counts"]
    index, exercise = first(lesson.id)
    open_playground(app, exercise.solution.playground_query(), exercise_ref(lesson, index))
    lab = app.session_state["lab"]
    assert lab.preset is None and lab.workload == lesson.build_workload() and lab.cursor == exercise.solution.step
    assert param(app, "preset") == "none" and param(app, "exercise") == exercise_ref(lesson, index)
    app.button(key="exercise_check").click().run()
    assert [s.value for s in ok(app).success][-1].startswith("Solved")


@pytest.mark.parametrize(
    "ref, words",
    [
        ("nope", "not an exercise reference"),
        ("no-such-lesson.1", "No lesson"),
        ("kv-cache-and-blocks.99", "there is no step 99"),
        ("kv-cache-and-blocks.1", "has no exercise"),
    ],
)
def test_a_bad_exercise_value_is_a_warning_and_the_playground_still_runs(app, ref, words):
    app.query_params["exercise"] = ref
    ok(app.run())
    assert any(words in w.value for w in app.warning), [w.value for w in app.warning]
    assert app.session_state["lab"] is not None  # the Playground runs as usual
    assert "exercise_check" not in {b.key for b in app.button}


def test_the_lesson_player_shows_the_box_with_the_playground_link(monkeypatch):
    monkeypatch.delenv("PYKV_MODEL", raising=False)
    lesson = BY_ID["kv-cache-and-blocks"]
    index, exercise = first(lesson.id)

    def page():
        from pykv.ui.pages import lessons

        lessons.render()

    at = AppTest.from_function(page, default_timeout=180)
    at.query_params["lesson"] = lesson.id
    at.query_params["step"] = str(index + 1)
    ok(at.run())
    assert "**Your turn**" in [m.value for m in at.markdown] and exercise.task in [m.value for m in at.markdown]
    (button,) = [b for b in at.get("link_button") if b.proto.label == "Open in the Playground"]
    url = button.proto.url
    assert url == f"./?{exercise.link.playground_query()}&exercise={lesson.id}.{index + 1}"
    assert "solution" not in url and exercise.solution.query not in url
