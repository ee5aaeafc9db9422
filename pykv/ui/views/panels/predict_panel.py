"""Predict, then step: a step's question before the engine answers it.

Until the answer is revealed, the page shows the question over the state *before* the step's actions
(its narration would give the answer away). Who reveals:

- a solo learner: their own answer (or "Just show me");
- in a class: the instructor, after the room has answered; every learner then sees the engine's outcome,
  their own answer and the room's answers (counts only, anonymous).
"""

from __future__ import annotations

import streamlit as st

from pykv.lessons.run.player import StepState
from pykv.ui.session import classroom, state
from pykv.ui.session.classroom import Membership
from pykv.ui.session.flash import flash, show
from pykv.ui.views.widgets import projector_chart
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.predictions import answers_figure
from pykv.viz.projection import PROJECTOR_TEXT_PX

SOLO = "solo_answers"  # session_state: (lesson id, step index) -> the learner's choice ("" = just show me)
TALLY_EVERY_S = 2.0  # the instructor's chart of the room's answers refreshes this often
COMPACT_BASE_PX, COMPACT_ROW_PX = 50, 22  # the class projector's chart, its text 14 px: 138 px for four choices


def solo_revealed(lesson_id: str, index: int) -> bool:
    return (lesson_id, index) in st.session_state.get(SOLO, {})


def forget_solo(lesson_id: str) -> None:
    answers = st.session_state.get(SOLO, {})
    for key in [key for key in answers if key[0] == lesson_id]:
        del answers[key]


def _solo_answer(lesson_id: str, index: int, radio: str | None) -> None:
    """``radio``: the key of the answer's radio (None: "just show me"); no choice picked is no answer yet."""
    choice = st.session_state.get(radio) if radio else ""
    if choice is None:
        flash("Pick an answer first (or press Just show me).", "warning", "predict")
        return
    st.session_state.setdefault(SOLO, {})[(lesson_id, index)] = choice


def question(step_state: StepState) -> None:
    p = step_state.prediction
    assert p is not None  # called only for a step with a prediction
    st.markdown(f"#### :material/psychology_alt: Predict: {p.question}")
    show("predict")


def solo(lesson_id: str, step_state: StepState, projector: bool = False) -> None:
    """Ask (not yet answered) or show the outcome beside the learner's own answer (on the projector without
    the why: the narration under it says it, and the screen has no line to spare)."""
    p, index = step_state.prediction, step_state.index
    assert p is not None  # called only for a step with a prediction
    answers = st.session_state.get(SOLO, {})
    if (lesson_id, index) not in answers:
        question(step_state)
        radio = f"predict_{lesson_id}_{index}"
        with st.form(f"predict_form_{index}", border=False):
            st.radio("Your answer", p.choices, index=None, key=radio)
            with st.container(horizontal=True, gap="small"):
                st.form_submit_button("Answer", type="primary", on_click=_solo_answer, args=(lesson_id, index, radio))
                st.form_submit_button("Just show me", on_click=_solo_answer, args=(lesson_id, index, None))
        return
    outcome(step_state, answers[(lesson_id, index)] or None, why=not projector)


def outcome(step_state: StepState, mine: str | None, why: bool = True) -> None:
    p = step_state.prediction
    assert p is not None  # called only for a step with a prediction
    said = f" You said **{mine}**." if mine else ""
    if p.correct is None:
        st.warning(f"{p.question} The engine's outcome ({p.answer!r}) is none of the choices.{said}")
    elif mine == p.correct:
        st.success(f"{p.question} **{p.correct}**: right.{said}")
    else:
        st.info(f"{p.question} The engine says **{p.correct}**.{said}")
    if p.why and why:
        st.caption(p.why)


def hidden(step_state: StepState, revealed: bool) -> bool:
    """Whether the step is still a question: its narration and views wait for the answer."""
    return step_state.prediction is not None and not revealed


def follower(member: Membership, step_state: StepState, answering: bool = True) -> None:
    """Answer until the instructor reveals; then the outcome and the room's answers. ``answering`` False: the
    class's projector, which shows the question and its choices only."""
    p, registry, me = step_state.prediction, classroom.classes(), classroom.learner_id()
    assert p is not None  # called only for a step with a prediction
    step = step_state.index + 1
    try:
        mine = registry.answer_of(member.code, me, step) if answering else None
    except Exception as e:  # the class ended meanwhile, an unreachable store: said, and the poll reruns the page
        st.caption(classroom.safe_error(e))
        return
    if member.state.revealed:
        outcome(step_state, mine)
        _room_chart(member.code, step, step_state, revealed=True, compact=not answering)
        return
    question(step_state)
    if not answering:
        st.markdown("\n".join(f"- {choice}" for choice in p.choices))
        return
    radio = f"class_predict_{step}"
    with st.form(f"class_predict_form_{step}", border=False):
        st.radio("Your answer", p.choices, index=p.choices.index(mine) if mine in p.choices else None, key=radio)
        st.form_submit_button(
            "Lock in my answer" if mine is None else "Change my answer",
            type="primary",
            on_click=_class_answer,
            args=(member.code, me, step, radio, p.choices),
        )
    if mine is not None:
        st.caption(f"Your answer: **{mine}**. The instructor reveals the engine's outcome.")


def _class_answer(code: str, me: str, step: int, radio: str, choices) -> None:
    choice = st.session_state.get(radio)
    if choice is None:
        flash("Pick an answer first.", "warning", "predict")
        return
    try:
        classroom.classes().answer(code, me, step, choice, list(choices))
    except Exception as e:  # a revealed step, an ended class: say so, nobody else is affected
        flash(classroom.safe_error(e), "warning", "predict")


def instructor(member: Membership, step_state: StepState) -> None:
    """The question, the room's answers as they come in, and the Reveal button."""
    step = step_state.index + 1
    if member.state.revealed:
        outcome(step_state, None)
        _room_chart(member.code, step, step_state, revealed=True)
        return
    question(step_state)
    st.button(
        "Reveal the engine's answer",
        key="class_reveal",
        type="primary",
        icon=":material/visibility:",
        on_click=_reveal,
        args=(member.code, member.secret),
    )

    @st.fragment(run_every=TALLY_EVERY_S)
    def live_tally() -> None:
        _room_chart(member.code, step, step_state, revealed=False)

    live_tally()


def _reveal(code: str, secret: str | None) -> None:
    try:
        classroom.classes().drive(code, secret or "", revealed=True)
    except Exception as e:
        flash(classroom.safe_error(e))


def _room_chart(code: str, step: int, step_state: StepState, revealed: bool, compact: bool = False) -> None:
    """The room's answers. ``compact``: the class projector, where the step's narration must fit beside it on
    one 1280x720 screen: a shorter chart, and no caption (the chart's subtitle counts the answers)."""
    p = step_state.prediction
    assert p is not None  # called only for a step with a prediction
    try:
        counts = classroom.classes().tally(code, step)
    except Exception as e:  # the class ended meanwhile
        st.caption(classroom.safe_error(e))
        return
    total = sum(counts.values())
    if not compact:
        st.caption(f"The room's answers: {total} learner{'s' if total != 1 else ''} answered.")
    fig = answers_figure(
        p.choices,
        counts,
        p.correct if revealed else None,
        dark=state.is_dark(),
        height=COMPACT_BASE_PX + COMPACT_ROW_PX * len(p.choices) if compact else None,
        floor_px=PROJECTOR_TEXT_PX if compact else None,
    )
    if compact:  # the class projector: at both of its sizes, as the room's other charts
        projector_chart.chart(fig, f"class_tally_{step}_{revealed}")
    else:
        st.plotly_chart(fig, theme=None, key=f"class_tally_{step}_{revealed}", config=PLOT_CONFIG)
