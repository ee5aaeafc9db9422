"""The Lessons page through streamlit.testing.v1.AppTest: the course list, deep links, Next / Prev /
restart, presenter mode, bad links and bad lesson files, and every lesson of lessons/ walked from its
first step to its last through the player with every check passing. On the shipped model ("tiny"):
the lessons are written for it."""

from __future__ import annotations

import json

import pytest
from app_helpers import details_key, ok, step_line
from streamlit.testing.v1 import AppTest

from pykv.lessons import load_lesson
from pykv.lessons.course.loader import lesson_files
from pykv.lessons.format.step_blocks import RunAction, Tokenize
from pykv.ui.safe_text import breakable
from pykv.viz.projection import PROJECTOR_SCALE

LESSON_FILES = lesson_files()
SMALL_LESSON = """---
id: {id}
title: {title}
summary: A two-step lesson made for the tests.
seed: 0
config: {{num_gpu_blocks: 16, block_size: 4, max_num_seqs: 4}}
workload:
  requests:
    - {{request_id: a, prompt: "def add(x, y):", max_tokens: 4, ignore_eos: true}}
---

## First

One engine step.

```actions
{actions}
```

```expect
- that: engine.step
  at_least: 1
```

## Second

Still here at engine step {{{{ engine.step }}}}.

```actions
- step: 1
```
"""


def shown(at: AppTest) -> tuple[int, int]:
    """(k, n) from the player's "step k of n" line; the URL agrees."""
    k, n = step_line(at)
    assert at.query_params["step"] in (str(k), [str(k)])
    return k, n


def failed_checks(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "✗" in m.value]


def player(at: AppTest, lesson_id: str):
    return at.session_state["lesson_players"][lesson_id]


def open_link(at: AppTest, lesson_id: str, step, presenter: bool = False) -> AppTest:
    at.query_params["lesson"] = lesson_id
    at.query_params["step"] = str(step)
    if presenter:
        at.query_params["presenter"] = "1"
    return ok(at.run())


@pytest.fixture(scope="module")
def course():
    if not LESSON_FILES:
        pytest.skip("no lesson files in lessons/")
    return [load_lesson(path) for path in LESSON_FILES]


def test_the_course_lists_every_lesson_with_its_summary_and_length(app, course):
    ok(app.run())
    assert not app.error
    cards = [m.value for m in app.markdown if m.value.startswith("**")]
    for n, lesson in enumerate(course, 1):
        steps = len(lesson.steps)
        card = next(c for c in cards if c.startswith(f"**{n}. {lesson.title}**"))
        assert f"{steps} step" in card and lesson.summary in card
        assert app.button(key=f"open_{lesson.id}").label == "Open"


def test_open_from_the_list_starts_the_player_at_step_one(app, course):
    ok(app.run())
    app.button(key=f"open_{course[0].id}").click().run()
    assert shown(ok(app)) == (1, len(course[0].steps)) and app.query_params["lesson"] in (course[0].id, [course[0].id])
    assert any(m.value == f"### {course[0].steps[0].title}" for m in app.markdown)
    assert app.get("plotly_chart"), "the live views are drawn"
    assert [m.label for m in app.metric][:2] == ["KV usage", "Preemptions"]  # the playground's metrics strip


def test_a_deep_link_opens_that_step(app, course):
    lesson = max(course, key=lambda lesson: len(lesson.steps))
    k = min(3, len(lesson.steps))
    open_link(app, lesson.id, k)
    assert shown(app) == (k, len(lesson.steps)) and player(app, lesson.id).index == k - 1
    assert any(m.value == f"### {lesson.steps[k - 1].title}" for m in app.markdown)
    assert not app.error and not app.warning


def test_next_prev_dots_and_restart_and_back_restores_the_exact_state(app, course):
    lesson = next(lesson for lesson in course if len(lesson.steps) >= 3)
    open_link(app, lesson.id, 1)
    app.button(key="lesson_next").click().run()
    assert shown(ok(app)) == (2, len(lesson.steps))
    before = player(app, lesson.id).state
    shown_before = [m.value for m in app.markdown]
    view_before = before.lab.view.to_json()
    app.button(key="lesson_next").click().run()
    assert shown(ok(app))[0] == 3
    app.button(key="lesson_prev").click().run()
    assert shown(ok(app))[0] == 2
    assert player(app, lesson.id).state is before and before.lab.view.to_json() == view_before
    assert [m.value for m in app.markdown] == shown_before  # the same narration, checks and engine narration
    app.button(key="lesson_dot_3").click().run()
    assert shown(ok(app))[0] == 3
    assert app.button(key="lesson_prev").disabled is False and app.button(key="lesson_next").disabled is (
        len(lesson.steps) == 3
    )
    app.button(key="lesson_restart_button").click().run()
    assert shown(ok(app))[0] == 1 and len(player(app, lesson.id).states) == 1
    assert app.button(key="lesson_prev").disabled
    app.button(key="lesson_home").click().run()
    assert "lesson" not in ok(app).query_params and app.button(key=f"open_{lesson.id}")


def notes_shown(at: AppTest, notes: str) -> bool:
    return any(m.value == notes for m in at.markdown)


def test_the_projector_view_never_shows_the_speaker_notes(app, course):
    lesson, k = next((lesson, i + 1) for lesson in course for i, step in enumerate(lesson.steps) if step.notes)
    notes = lesson.steps[k - 1].notes
    open_link(app, lesson.id, k)
    assert notes_shown(app, notes) and any(e.label == "Speaker notes" for e in app.expander)  # folded, for a rehearsal
    app.toggle(key="lesson_presenter").set_value(True).run()
    assert ok(app).query_params["presenter"] in ("1", ["1"]) and shown(app)[0] == k
    assert not notes_shown(app, notes) and not any(e.label == "Speaker notes" for e in app.expander)
    app.button(key="lesson_next").click().run()  # presenter=1 stays in the URL
    assert ok(app).query_params["presenter"] in ("1", ["1"])


def test_projector_deep_link_folds_the_checks(app, course):
    lesson, k = next((lesson, i + 1) for lesson in course for i, step in enumerate(lesson.steps) if step.notes)
    open_link(app, lesson.id, k, presenter=True)
    assert app.toggle(key="lesson_presenter").value and not notes_shown(app, lesson.steps[k - 1].notes)
    lesson, k = next((lesson, i + 1) for lesson in course for i, step in enumerate(lesson.steps) if step.expect)
    open_link(app, lesson.id, k, presenter=True)
    n = len(app.session_state["lesson_players"][lesson.id].state.checks)
    assert any(e.label == f"Checks ✓ {n}/{n}" for e in app.expander)


def test_the_projector_ends_a_lesson_with_its_takeaway_beside_the_pool_and_the_exercise_as_one_line(app, course):
    lesson = next(
        lesson for lesson in course if lesson.takeaway and lesson.steps[-1].exercise and not lesson.steps[-1].predict
    )
    n = len(lesson.steps)
    open_link(app, lesson.id, n, presenter=True)
    takeaway = [s.value for s in app.success if "Takeaway" in s.value]
    assert takeaway == [f"**Takeaway** · {lesson.takeaway}"]  # no "End of the lesson…" navigation for the room
    assert not any(m.value == "**This step**" for m in app.markdown)  # the takeaway took the step log's place
    task = lesson.steps[-1].exercise.task
    assert any(m.value.endswith(f"**Your turn** · {task}") for m in app.markdown)
    assert not any(b.label == "Open in the Playground" for b in app.get("link_button"))
    app.toggle(key="lesson_presenter").set_value(False).run()  # off the projector: the whole box and ending
    assert "presenter" not in ok(app).query_params
    assert any("End of the lesson" in s.value for s in app.success)
    assert any(b.label == "Open in the Playground" for b in app.get("link_button"))


@pytest.mark.parametrize(
    "step, shows, message",
    [
        ("x", 1, "not a step number"),
        ("0", 1, "does not exist"),
        ("99", None, "does not exist"),
    ],
)
def test_a_bad_step_in_the_link_warns_and_shows_a_real_step(app, course, step, shows, message):
    lesson = course[0]
    open_link(app, lesson.id, step)
    n = len(lesson.steps)
    assert shown(app) == (shows or n, n)
    assert any(message in w.value for w in app.warning) and not app.error


def test_an_unknown_lesson_is_a_message_and_the_course_still_lists(app, course):
    open_link(app, "no-such-lesson", 2)
    assert any("no-such-lesson" in e.value for e in app.error)
    assert app.button(key=f"open_{course[0].id}")


def test_a_bad_lesson_file_is_named_and_the_rest_of_the_course_still_lists(app, course_folder):
    good = SMALL_LESSON.format(id="good", title="Good lesson", actions="- step: 1")
    bad = SMALL_LESSON.format(id="bad", title="Bad lesson", actions="- step: 1")
    bad = bad.replace("seed: 0", "seed: 0\ncolour: red")  # not a front matter field
    course_folder(("01-good.md", good), ("02-bad.md", bad))
    ok(app.run())
    assert len(app.error) == 1 and "02-bad.md" in app.error[0].value and "colour" in app.error[0].value
    assert app.button(key="open_good")
    open_link(app, "good", 2)
    assert shown(app) == (2, 2) and not failed_checks(app) and not app.error


def test_a_failing_action_shows_its_error_and_the_lesson_stays_navigable(app, course_folder):
    text = SMALL_LESSON.format(id="broken", title="Broken", actions="- step: 1\n- run_until: preemption")
    course_folder(("01-broken.md", text))
    open_link(app, "broken", 1)
    assert any("preemption" in e.value for e in app.error), [e.value for e in app.error]
    assert failed_checks(app)
    app.button(key="lesson_next").click().run()
    assert shown(ok(app)) == (2, 2)
    app.button(key="lesson_prev").click().run()
    assert shown(ok(app)) == (1, 2) and app.error


def test_tokenize_draws_a_token_diff_and_side_runs_a_table(app, course_folder):
    actions = (
        '- tokenize: {name: pair, a: "def add(x, y):", b: "def add(x, z):"}\n'
        "- run: {name: small, config: {num_gpu_blocks: 8}}"
    )
    text = SMALL_LESSON.format(id="tok", title="Tokens", actions=actions).replace("  at_least: 1", "  at_least: 0")
    course_folder(("01-tok.md", text))
    open_link(app, "tok", 1)
    assert not app.error and not failed_checks(app)
    charts = {c.proto.id for c in app.get("plotly_chart")}
    assert any("lesson_tokens_pair" in c for c in charts), charts
    assert app.expander[0].label == "Token diff `tokens.pair`"
    runs = next(d.value for d in app.dataframe if "measured" in d.value.columns)  # a column per run: none cut off
    assert list(runs.columns) == ["measured", "small"]
    assert int(runs.set_index("measured").loc["steps", "small"]) > 0
    app.button(key="lesson_next").click().run()
    assert shown(ok(app)) == (2, 2) and app.expander[0].label == "Token diff `tokens.pair`"  # kept, folded


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_every_lesson_plays_to_its_end_through_the_page_with_every_check_passing(app, path):
    lesson = load_lesson(path)
    n = len(lesson.steps)
    open_link(app, lesson.id, 1)
    for k in range(1, n + 1):
        if k > 1:
            app.button(key="lesson_next").click().run()
        assert shown(ok(app)) == (k, n)
        where = f"{path.name} step {k} ({lesson.steps[k - 1].title})"
        state = player(app, lesson.id).state
        assert state.passed, f"{where}: errors {state.errors}, failed {[vars(c) for c in state.failed_checks]}"
        if state.prediction is not None:  # the question first, over the step before; answering reveals the step
            assert any(state.prediction.question in m.value for m in app.markdown)
            narration = breakable(state.narration)  # as the page draws it
            assert not any(narration == m.value for m in app.markdown), f"{where}: the narration gives it away"
            app.radio(key=f"predict_{lesson.id}_{k - 1}").set_value(state.prediction.correct)
            next(b for b in app.button if b.label == "Answer").click().run()
            assert any(": right." in s.value for s in ok(app).success), where
        assert not failed_checks(app) and not app.error, f"{where}: {failed_checks(app)} {[e.value for e in app.error]}"
        assert sum("✓" in m.value for m in app.markdown) == (1 if lesson.steps[k - 1].expect else 0)
    last = path == LESSON_FILES[-1]  # the end of a lesson offers the next one, the course's last nothing
    assert app.button(key="lesson_next").label == ("Next" if last else "Next lesson")
    assert app.button(key="lesson_next").disabled is last and any("End of the lesson" in s.value for s in app.success)


def test_the_projector_draws_each_chart_for_720p_and_larger_for_1080p(app, course):
    lesson, k = next(
        (lesson, i + 1)
        for lesson in course
        for i, step in enumerate(lesson.steps)
        if any(isinstance(a, RunAction) for a in step.actions) and not step.predict
    )
    open_link(app, lesson.id, k, presenter=True)
    heights: dict[str, list[int]] = {}
    for chart in ok(app).get("plotly_chart"):
        layout = json.loads(chart.proto.spec)["layout"]
        heights.setdefault(layout["title"]["text"], []).append(layout["height"])
    assert any(title.startswith("Device KV pool") for title in heights) and len(heights) >= 3  # grid, queues, runs
    for title, (small, large) in heights.items():
        assert large == round(small * PROJECTOR_SCALE), title


def test_a_step_that_names_a_detail_tab_opens_on_it_and_draws_only_it(app, course):
    lesson, k = next(
        (lesson, i + 1)
        for lesson in course
        for i, step in enumerate(lesson.steps)
        if step.focus == "costs" and not step.predict
    )  # a question hides the step's views
    open_link(app, lesson.id, k)
    assert details_key(app, "lesson_") == "lesson_details_costs"
    assert app.session_state["lesson_details_costs"] == "Preemption costs"
    assert any("Look at Preemption costs" in m.value for m in app.markdown)
    costs = [df.value for df in app.dataframe if "recompute time" in df.value.columns]
    assert costs or any(c.value == "No preemption yet." for c in app.caption)
    assert not [df for df in app.dataframe if "TTFT ms (engine time)" in df.value.columns]  # Requests: not drawn


def test_the_projector_draws_a_token_diff_for_720p_and_larger_for_1080p(app, course):
    lesson, k = next(
        (lesson, i + 1)
        for lesson in course
        for i, step in enumerate(lesson.steps)
        if any(isinstance(a, Tokenize) for a in step.actions) and not step.predict
    )
    open_link(app, lesson.id, k, presenter=True)
    heights = [
        json.loads(chart.proto.spec)["layout"]["height"]
        for chart in ok(app).get("plotly_chart")
        if json.loads(chart.proto.spec)["layout"]["title"]["text"].startswith("Token diff")
    ]
    assert len(heights) == 2 and heights[1] == round(heights[0] * PROJECTOR_SCALE), heights
