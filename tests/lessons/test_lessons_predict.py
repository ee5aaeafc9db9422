"""Predict, then step: a step's ```predict block loads with its answer path checked like expect's, every
malformed block names the file and the field, and the player answers it with the engine's real outcome
(a value that is none of the choices is a failed check, so the course replay catches it)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pykv.lessons import LessonError, LessonPlayer, PredictionResult, load_lesson, parse_lesson, replay
from pykv.lessons.format.predict import CHECK_DESCRIPTION, Prediction, answer_text, parse_prediction

FIXTURE = Path(__file__).parents[1] / "lesson_fixtures" / "predict.md"
FRONT = """\
---
id: predict
title: Predict
summary: For the prediction tests.
seed: 0
config: {num_gpu_blocks: 8, block_size: 4, max_num_seqs: 4}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 16, ignore_eos: true}
    - {request_id: b, prompt: "class Stack:", max_tokens: 16, ignore_eos: true}
---

"""
PREDICT = """\
question: Which request will be preempted?
choices: [a, b]
answer: preemptions.last.request_id
why: the last admitted goes
"""
S = "steps[0] (Preempt)"


def body(predict: str = PREDICT, actions: str = "- run_until: preemption\n", extra: str = "") -> str:
    return (
        f"## Preempt\n\nThe pool runs out.\n\n```predict\n{textwrap.dedent(predict)}```\n\n"
        f"```actions\n{actions}```\n{extra}"
    )


def error_for(tmp_path: Path, text: str) -> LessonError:
    path = tmp_path / "01-predict.md"
    path.write_text(FRONT + text)
    with pytest.raises(LessonError) as info:
        load_lesson(path)
    assert str(info.value).startswith(str(path)) or "01-predict.md" in str(info.value).split(":")[0]
    return info.value


# ---- loading ------------------------------------------------------------------------------------


def test_a_predict_block_loads_and_is_not_narration():
    lesson = parse_lesson(FRONT + body(), "predict.md")
    (step,) = lesson.steps
    assert step.predict == Prediction(
        question="Which request will be preempted?",
        choices=("a", "b"),
        answer="preemptions.last.request_id",
        why="the last admitted goes",
    )
    assert "```predict" not in step.narration and "question:" not in step.narration
    assert parse_lesson(FRONT + "## Plain\n\nText.\n", "plain.md").steps[0].predict is None


def test_choices_written_as_yaml_numbers_and_booleans_become_their_answer_text():
    p = parse_prediction({"question": "How many?", "choices": [0, 1.0, 2.5, "3+"], "answer": "engine.step"})
    assert p.choices == ("0", "1", "2.5", "3+")
    assert parse_prediction({"question": "Done?", "choices": [True, False], "answer": "engine.done"}).choices == (
        "true",
        "false",
    )
    assert [answer_text(v) for v in (7, 2.0, 0.25, True, None, "c", ["a", 1])] == [
        "7",
        "2",
        "0.25",
        "true",
        "none",
        "c",
        "[a, 1]",
    ]


def test_the_answer_may_name_what_this_steps_actions_define():
    text = body(
        PREDICT.replace("preemptions.last.request_id", "request.z.status"),
        "- add_request: {request_id: z, prompt: x, max_tokens: 2}\n",
    )
    assert parse_lesson(FRONT + text, "p.md").steps[0].predict.answer == "request.z.status"


@pytest.mark.parametrize(
    "predict, field, words",
    [
        # the answer path, checked as an expect path is
        (
            PREDICT.replace("preemptions.last.request_id", "request.zz.status"),
            S + ".predict.answer",
            "names request 'zz'",
        ),
        (
            PREDICT.replace("preemptions.last.request_id", "reqest.a.status"),
            S + ".predict.answer",
            "unknown root 'reqest'",
        ),
        (
            PREDICT.replace("preemptions.last.request_id", "preemptions.last.colour"),
            S + ".predict.answer",
            "field 'colour' is unknown",
        ),
        (
            PREDICT.replace("preemptions.last.request_id", "request.a.colour"),
            S + ".predict.answer",
            "request field 'colour' is unknown",
        ),
        (
            PREDICT.replace("preemptions.last.request_id", "run.nope.steps"),
            S + ".predict.answer",
            "no earlier 'run' action",
        ),
        # the choices
        (PREDICT.replace("[a, b]", "[a]"), S + ".predict.choices", "1 choice; a prediction offers 2 to 6"),
        (PREDICT.replace("[a, b]", "[a, b, c, d, e, f, g]"), S + ".predict.choices", "7 choices"),
        (PREDICT.replace("[a, b]", "[a, b, a]"), S + ".predict.choices[2]", "'a' is already choice 0"),
        (PREDICT.replace("[a, b]", "[1, 1.0]"), S + ".predict.choices[1]", "'1' is already choice 0"),
        (PREDICT.replace("[a, b]", "a or b"), S + ".predict.choices", "must be a YAML list"),
        (PREDICT.replace("[a, b]", "[a, [b]]"), S + ".predict.choices[1]", "one short text or number"),
        (PREDICT.replace("[a, b]", "[a, '']"), S + ".predict.choices[1]", "1 to 60 characters"),
        (PREDICT.replace("[a, b]", f"[a, {'b' * 61}]"), S + ".predict.choices[1]", "1 to 60 characters"),
        # the other fields
        (PREDICT + "colour: red\n", S + ".predict.colour", "unknown field; a predict block takes question, choices"),
        (PREDICT.replace("question: Which request will be preempted?\n", ""), S + ".predict.question", "missing"),
        (PREDICT.replace("answer: preemptions.last.request_id\n", ""), S + ".predict.answer", "missing"),
        (
            PREDICT.replace("Which request will be preempted?", "x" * 301),
            S + ".predict.question",
            "301 characters; at most 300",
        ),
        (PREDICT.replace("the last admitted goes", "[1, 2]"), S + ".predict.why", "must be an explanation"),
        ("- question: a list, not a mapping\n", S + ".predict", "a predict block is a YAML mapping"),
        ("question: [unclosed\n", S + ".predict", "not valid YAML"),
    ],
)
def test_a_malformed_predict_block_names_the_file_and_the_field(tmp_path, predict, field, words):
    error = error_for(tmp_path, body(predict))
    assert error.field == field, str(error)
    assert words in error.problem, str(error)


def test_a_step_has_at_most_one_predict_block(tmp_path):
    error = error_for(tmp_path, body(extra=f"\n```predict\n{PREDICT}```\n"))
    assert error.field == S + ".predict" and "a second ```predict block" in error.problem


# ---- playing ------------------------------------------------------------------------------------


def test_the_prediction_is_answered_by_the_engines_outcome(tiny):
    player = LessonPlayer(parse_lesson(FRONT + body(), "p.md"), tiny)
    state = player.state
    assert state.prediction == PredictionResult(
        question="Which request will be preempted?",
        choices=("a", "b"),
        answer="b",
        correct="b",
        why="the last admitted goes",
    )
    assert state.passed and CHECK_DESCRIPTION not in [c.description for c in state.checks]


def test_an_answer_that_is_none_of_the_choices_is_a_failed_check(tiny):
    wrong = PREDICT.replace("[a, b]", "[a, c]").replace(
        "preemptions.last.request_id", "last_step.preempted.0.request_id"
    )
    state = LessonPlayer(parse_lesson(FRONT + body(wrong), "p.md"), tiny).state
    assert state.prediction.answer == "b" and state.prediction.correct is None
    assert not state.passed
    (failed,) = state.failed_checks
    assert failed.description == CHECK_DESCRIPTION and failed.actual == "b" and failed.expected == ["a", "c"]
    assert "none of the choices" in failed.error


def test_an_answer_that_cannot_be_read_is_a_failed_check(tiny):
    # no step runs, so there is no preemption to read: the prediction cannot be answered
    unread = PREDICT.replace("preemptions.last.request_id", "last_step.preempted.0.request_id")
    state = LessonPlayer(
        parse_lesson(FRONT + body(unread, "- add_request: {request_id: z, prompt: x, max_tokens: 2}\n"), "p.md"), tiny
    ).state
    assert state.prediction.answer is None and state.prediction.correct is None
    (failed,) = state.failed_checks
    assert failed.description == CHECK_DESCRIPTION and "no engine step has run yet" in failed.error


def test_the_fixture_replays_numbers_booleans_and_statuses(tiny):
    states = replay(load_lesson(FIXTURE), tiny)
    assert all(s.passed for s in states), [(s.step.title, s.errors, s.failed_checks) for s in states]
    answers = [(s.prediction.answer, s.prediction.correct) if s.prediction else None for s in states]
    assert answers == [("5", "5"), ("b", "b"), None, ("true", "true")]
