"""A lesson step's "Your turn" box: the exercise's task and a link that opens the Playground at its start.

The link opens a new tab, ``./?<the exercise's link>&exercise=<lesson id>.<step>``: the learner's
own engine, where the Playground's "Your turn" panel (``exercise_panel``) has the hints and the self-check.
The solution is never shown here.
"""

from __future__ import annotations

import streamlit as st

from pykv.lessons.format.exercise_block import Exercise
from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.exercises import exercise_ref


def playground_url(lesson: Lesson, index: int, exercise: Exercise) -> str:
    """The Playground link of the exercise on ``lesson.steps[index]`` (relative: it works under any base path).
    The Playground is the default page, which Streamlit serves at the app's root (``/``) and not at
    ``/playground``, so the link names the root."""
    return f"./?{exercise.link.playground_query()}&exercise={exercise_ref(lesson, index)}"


def render(lesson: Lesson, index: int, projector: bool = False) -> None:
    """The box, if the step has an exercise. On the projector only the task: the room opens the link on
    their own screens (a class follower's page has the box), and the screen has no room for a button."""
    exercise = lesson.steps[index].exercise
    if exercise is None:
        return
    if projector:
        st.markdown(f":material/exercise: **Your turn** · {exercise.task}")
        return
    with st.container(border=True, key="lesson_exercise"):
        st.markdown("**Your turn**")
        st.markdown(exercise.task)
        hints = f" It has {len(exercise.hints)} hints." if exercise.hints else ""
        st.link_button(
            "Open in the Playground",
            playground_url(lesson, index, exercise),
            type="primary",
            icon=":material/open_in_new:",
            help="A new tab with your own engine at the exercise's start, and a Check my answer button "
            "that reads your engine's state." + hints,
        )
