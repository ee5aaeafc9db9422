"""What the course adds around a lesson's steps: its objective (on step 1), its takeaway (at its end),
the "optional" badge of a step, and the path a learner follows.

    /lessons?lesson=ID&step=k&path=core   the workshop path: Next and Prev skip {optional} steps, and
                                          the lesson ends at its last core step (pykv.lessons.course.workshop)

The player keeps ``path`` in the URL as it moves; the course list sets it (``path_chooser``).
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from pykv.lessons.course.workshop import (
    PathName,
    course_minutes,
    lesson_after,
    lesson_minutes,
    on_workshop_path,
    path_named,
    step_after,
    step_before,
)
from pykv.lessons.format.schema import Lesson, LessonStep
from pykv.ui import safe_text
from pykv.ui.session import course_files

PATH_PARAM = "path"
PATH_LABELS = {"core": "Workshop path: core steps only", "full": "Full course: every step"}


def current_path(warn: bool = True) -> PathName:
    """The path the URL names (the full course when it names none, or names none that exists)."""
    try:
        return path_named(st.query_params.get(PATH_PARAM)) or "full"
    except ValueError as e:
        if warn:
            st.warning(f"{safe_text.plain(e)}; showing the full course.")
        return "full"


def path_params(warn: bool = True) -> dict[str, str]:
    """The URL parameter that keeps the workshop path while the player moves (none for the full course); a
    path that is no path is dropped from the URL here, with a warning unless ``warn`` is False."""
    return {PATH_PARAM: "core"} if current_path(warn) == "core" else {}


def neighbours(lesson: Lesson, k: int, path: PathName) -> tuple[int | None, int | None]:
    """(the 1-based step Prev goes to, the one Next goes to) from step ``k`` on this path; None at an end."""
    before, after = step_before(lesson, k - 1, path), step_after(lesson, k - 1, path)
    return (None if before is None else before + 1), (None if after is None else after + 1)


def next_lesson(lesson: Lesson, path: PathName) -> Lesson | None:
    """The lesson that follows ``lesson`` in this server's course on this path (None after the last)."""
    return lesson_after(course_files.course()[0], lesson.id, path)


def next_button(
    lesson: Lesson, k: int, path: PathName, go: Callable[[int], None], open_lesson: Callable[[str], None], keys: bool
) -> None:
    """Next: the path's next step, or at the lesson's end "Next lesson" (the next one's first step; disabled after
    the course's last). ``go`` moves to a step, ``open_lesson`` to a lesson; ``keys``: → presses it."""
    after = neighbours(lesson, k, path)[1]
    following = next_lesson(lesson, path) if after is None else None
    key_hint = " (keyboard →)" if keys else ""
    if following is not None:
        st.button(
            "Next lesson",
            key="lesson_next",
            shortcut="Right" if keys else None,
            type="primary",
            icon=":material/skip_next:",
            on_click=open_lesson,
            args=(following.id,),
            help=f"“{following.title}”, from its first step{key_hint}.",
        )
        return
    st.button(
        "Next",
        key="lesson_next",
        shortcut="Right" if keys else None,
        type="primary",
        icon=":material/arrow_forward:",
        on_click=go,
        args=(after or k,),
        disabled=after is None,
        help=f"The next step{key_hint}." if after is not None else "The course's last step.",
    )


def dot_help(i: int, step: LessonStep, on_screen: bool) -> str:
    return f"Step {i}: {step.title}" + (" · optional" if step.optional else "") + (" (on screen)" if on_screen else "")


def step_title(step: LessonStep) -> None:
    """The step's ``###`` title; an optional step gets a small badge beside it."""
    if not step.optional:
        st.markdown(f"### {step.title}")
        return
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="lesson_step_title"):
        st.markdown(f"### {step.title}")
        st.badge(
            "optional",
            icon=":material/explore:",
            color="gray",
            help="This step deepens the lesson; the 90-minute workshop path skips it.",
        )


def objective(lesson: Lesson) -> None:
    """The lesson's objective, shown when it opens (its first step)."""
    if lesson.objective:
        st.info(f"**Objective** · {lesson.objective}", icon=":material/flag:")


def end_of_lesson(lesson: Lesson, path: PathName, projector: bool = False) -> None:
    """The lesson's end on this path: its takeaway, and where to go next (on the projector the takeaway
    alone: the room needs the point, not the navigation)."""
    if projector and lesson.takeaway:
        with st.container(key="projector_takeaway"):
            st.success(f"**Takeaway** · {lesson.takeaway}", icon=":material/done_all:")
        return
    skipped = sum(step.optional for step in lesson.steps) if path == "core" else 0
    end = "End of the lesson" + (
        f" on the workshop path ({skipped} optional step{'s' if skipped != 1 else ''} skipped: the dots open them)"
        if skipped
        else ""
    )
    takeaway = f"**Takeaway** · {lesson.takeaway}\n\n" if lesson.takeaway else ""
    following = next_lesson(lesson, path)
    then = f"**Next lesson** opens “{following.title}”" if following else "That was the course's last lesson"
    st.success(f"{takeaway}{end}. {then}.", icon=":material/done_all:")


# ---- the course list ---------------------------------------------------------------------------


def path_chooser(lessons: list[Lesson]) -> PathName:
    """The two paths through the course, with their total time; the choice lives in the URL."""
    path = current_path()
    totals = {name: course_minutes(lessons, name) for name in PATH_LABELS}  # type: ignore[arg-type]
    st.segmented_control(
        "Path through the course",
        list(PATH_LABELS),
        default=path,
        key="course_path",
        format_func=lambda name: f"{PATH_LABELS[name]} · {totals[name]} min",
        on_change=_choose_path,
        required=True,
        help="The workshop path fits a 90-minute session: Next skips the steps marked optional. "
        "The full course plays every step.",
    )
    return path


def _choose_path() -> None:
    if st.session_state.course_path == "core":
        st.query_params[PATH_PARAM] = "core"
    elif PATH_PARAM in st.query_params:
        del st.query_params[PATH_PARAM]


def card_text(n: int, lesson: Lesson, path: PathName) -> str:
    """A course card's Markdown: title, steps and minutes on the chosen path, summary, objective."""
    steps = len(lesson.steps)
    core = sum(not step.optional for step in lesson.steps)
    length = f"{steps} step{'s' if steps != 1 else ''}" + (f" ({core} core)" if core < steps else "")
    minutes = lesson_minutes(lesson, path)
    if path == "core" and not on_workshop_path(lesson):
        length += " · full course only: the workshop path leaves it out"
    elif minutes is not None:
        length += f" · {minutes} min" + (" on the workshop path" if path == "core" and core < steps else "")
    text = f"**{n}. {lesson.title}** · {length}  \n{lesson.summary}"
    return text + (f"  \n:material/flag: *{lesson.objective}*" if lesson.objective else "")
