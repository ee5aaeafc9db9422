"""The Playground's "Your turn" panel, when its URL carries ``exercise=<lesson id>.<step>``.

It shows the exercise's task, its hints one at a time, and a **Check my answer** button that reads the
exercise's ``solved`` checks on this session's Lab (``pykv.lessons.run.exercises.check_exercise``) and says
solved or not yet, with each goal in words. An exercise on a lesson's own workload (``preset=lesson`` in
its block, ``preset=none`` in the URL) gets that workload in the session's first Lab. A reference that
names no exercise is a warning; the Playground then runs as usual.
"""

from __future__ import annotations

import streamlit as st

from pykv.lessons.format.exercise_block import Exercise
from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.exercises import ExerciseResult, check_exercise, find_exercise, link_workload
from pykv.lessons.values.checks import CheckResult, format_short
from pykv.ui import safe_text
from pykv.ui.session import course_files, state

PARAM = "exercise"
HINTS = "exercise_hints"  # session_state: exercise reference -> how many hints are shown
RESULT = "exercise_result"  # session_state: (exercise reference, ExerciseResult or a message)


def render() -> None:
    """Call before the Playground builds its Lab (``state.get_lab``): a lesson-workload exercise builds it."""
    ref = st.query_params.get(PARAM)
    if ref is None:
        return
    found = _find(ref)
    if found is None:
        return
    lesson, index, exercise = found
    if exercise.link.lesson_workload and st.query_params.get("preset", "none") == "none":
        _, seed, workload = link_workload(exercise.link, lesson)
        state.get_lab(workload, seed)  # the session's first Lab only; an error is shown by get_lab
    _panel(lesson, index, exercise, ref)


def _find(ref: str) -> tuple[Lesson, int, Exercise] | None:
    lessons, _ = course_files.course()
    try:
        return find_exercise(lessons, ref)
    except ValueError as e:
        st.warning(f"{safe_text.plain(e)} The Playground runs without an exercise.")
        return None


def _panel(lesson: Lesson, index: int, exercise: Exercise, ref: str) -> None:
    shown = st.session_state.get(HINTS, {}).get(ref, 0)
    with st.container(border=True, key="exercise_panel"):
        st.markdown(
            f"**Your turn** · {lesson.title}, step {index + 1} · "
            f"[back to the lesson](lessons?lesson={lesson.id}&step={index + 1})"
        )
        st.markdown(exercise.task)
        for i, hint in enumerate(exercise.hints[:shown], 1):
            st.info(f"Hint {i}: {hint}", icon=":material/lightbulb:")
        with st.container(horizontal=True, gap="small", key="exercise_buttons"):
            st.button(
                "Check my answer",
                key="exercise_check",
                type="primary",
                icon=":material/task_alt:",
                on_click=_check,
                args=(lesson, exercise, ref),
                help="Reads your engine at the step on screen: run to the end first if the task is about "
                "the whole run.",
            )
            if shown < len(exercise.hints):
                st.button(
                    f"Hint {shown + 1} of {len(exercise.hints)}",
                    key="exercise_hint",
                    icon=":material/lightbulb:",
                    on_click=_more_hints,
                    args=(ref,),
                )
        result = st.session_state.get(RESULT)
        if result is not None and result[0] == ref:
            _show(result[1])


def _more_hints(ref: str) -> None:
    hints = st.session_state.setdefault(HINTS, {})
    hints[ref] = hints.get(ref, 0) + 1


def _check(lesson: Lesson, exercise: Exercise, ref: str) -> None:
    lab = st.session_state.get("lab")
    if lab is None:
        st.session_state[RESULT] = (ref, "There is no engine to check yet: the Playground could not start one.")
        return
    try:
        st.session_state[RESULT] = (ref, check_exercise(exercise, lab, lesson))
    except Exception as e:  # the self-check must never take the page down
        st.session_state[RESULT] = (ref, f"The check could not run: {type(e).__name__}: {e}")


def goal_line(check: CheckResult) -> str:
    """One Markdown list line: the goal in words, and what the engine shows now when it is not met."""
    goal = check.why or f"`{check.description}`"  # the lesson's words (Markdown, as its narration is)
    if check.passed:
        return f"- :green[✓] {goal}"
    now = check.error if check.error else f"now {format_short(check.actual)}"
    return f"- :red[✗] {goal} — {safe_text.plain(now)}"


def _show(result: ExerciseResult | str) -> None:
    if isinstance(result, str):
        st.error(safe_text.plain(result))
        return
    lines = "\n".join(goal_line(c) for c in result.checks)
    if result.solved:
        st.success(f"Solved, at step {result.step}. Well done.", icon=":material/celebration:")
    else:
        st.warning(
            f"Not yet: {len(result.failed)} of {len(result.checks)} goals are not met at step {result.step}.",
            icon=":material/pending:",
        )
    st.markdown(lines)
    st.caption("Checked when you clicked; step or change a knob, then check again.")
