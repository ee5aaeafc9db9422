"""The speaker view: the instructor's second window (``…&key=…&speaker=1``), never projected.

It shows what the projector does not: the speaker notes, the answer of the step's prediction before it is
revealed, the checks in full, what comes next and the time spent. Both windows hold the class's key and
either one moves the class; each follows the other through the class (``classroom.follow_other_window``),
so the speaker view stays on the step the projector shows. It draws no engine views: it is cheap.
"""

from __future__ import annotations

import time
from typing import Callable

import streamlit as st

from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.player import StepState
from pykv.ui.session.classroom import Membership
from pykv.ui.views.panels import lesson_guide, lesson_text, predict_panel

CLOCK_EVERY_S = 5.0
STEP_SINCE = "speaker_step_since"  # session_state: (lesson id, step) -> when this window first showed it


def render(
    lesson: Lesson,
    states: list[StepState],
    index: int,
    member: Membership,
    go: Callable[[int], None],
    open_lesson: Callable[[str], None],
) -> None:
    step_state, n, k = states[index], len(lesson.steps), index + 1
    st.markdown(f"**{lesson.title}** · step {k} of {n}")
    st.caption(
        f"Speaker view of class `{member.code}`: keep this window off the projector. It follows the "
        "projector, and its Prev / Next move the class too."
    )
    before, after = lesson_guide.neighbours(lesson, k, lesson_guide.current_path())  # ?path=core skips {optional}
    with st.container(horizontal=True, gap="small", key="speaker_controls"):
        st.button(
            "Prev",
            key="lesson_prev",
            icon=":material/arrow_back:",
            on_click=go,
            args=(before or 1,),
            disabled=before is None,
        )
        lesson_guide.next_button(lesson, k, lesson_guide.current_path(), go, open_lesson, keys=False)
    at_class_step = (member.state.lesson_id, member.state.step) == (lesson.id, k) and member.state.step_at > 0
    since = (
        member.state.step_at
        if at_class_step
        else st.session_state.setdefault(STEP_SINCE, {}).setdefault((lesson.id, k), time.time())
    )  # when the step began
    _clock(member, since)
    st.markdown(f"### On the projector: {step_state.step.title}")
    if (p := step_state.prediction) is not None:
        answer = p.correct if p.correct is not None else f"none of the choices (the engine read {p.answer!r})"
        st.markdown(f"**Prediction's answer:** {answer}" + (f" — {p.why}" if p.why else ""))
        predict_panel.instructor(member, step_state)
    if step_state.notes:
        with st.container(border=True, key="speaker_notes"):
            st.markdown("**Speaker notes**")
            st.markdown(step_state.notes)
    else:
        st.caption("No speaker notes for this step.")
    checks = lesson_text.checks_summary(step_state) if step_state.checks else "no checks"
    with st.expander(f"Narration and checks ({checks})"):
        lesson_text.body(step_state, key_prefix="speaker_")
    if after is not None:
        following = lesson.steps[after - 1]
        st.markdown(f"**Next:** {following.title}" + (" · asks a prediction" if following.predict else ""))
    elif (following_lesson := lesson_guide.next_lesson(lesson, lesson_guide.current_path())) is not None:
        st.markdown(f"**Next:** the end of the lesson; *Next lesson* opens “{following_lesson.title}”.")
    else:
        st.markdown("**Next:** the end of the course.")


def _clock(member: Membership, since: float) -> None:
    @st.fragment(run_every=CLOCK_EVERY_S)
    def clock() -> None:
        now = time.time()
        st.caption(
            f":material/timer: {_mmss(now - since)} on this step · "
            f"{_mmss(now - member.state.created_at)} since the class started"
        )

    clock()


def _mmss(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"
