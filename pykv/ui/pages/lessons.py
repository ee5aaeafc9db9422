"""The Lessons page: the course list, a class follower's page, and the lesson player (``lesson_player``).

/lessons                              the course: title, summary, objective, steps and minutes
/lessons?path=core                    the same on the 90-minute workshop path (``lesson_guide``)
/lessons?cheatsheet=1                 the printable cheat sheet (``cheatsheet_page``)
/lessons?lesson=ID&step=k             the player at step k (1-based) of lesson ID
/lessons?lesson=ID&step=k&presenter=1 the projector view: large type, no notes, checks folded
…&class=CODE&key=…&speaker=1          the speaker view: notes, answers, timing (``speaker_view``)

/lessons?class=CODE                   a learner in a class: the page follows the instructor
                                      (``follower_page``); the instructor's own URL adds lesson,
                                      step and the class's ``key`` (``classroom``)
"""

from __future__ import annotations

import streamlit as st

from pykv.classroom import ClassNotFound, StoreUnavailable
from pykv.lessons.format.schema import Lesson
from pykv.ui import safe_text
from pykv.ui.session import classroom, course_files
from pykv.ui.session.classroom import CLASS_PARAM, KEY_PARAM
from pykv.ui.session.flash import show
from pykv.ui.views.panels import cheatsheet, class_panel, lesson_guide
from pykv.ui.views.players import follower, lesson_player
from pykv.ui.views.widgets.style import LESSON_DOTS_CSS, PAGE_CSS


def render() -> None:
    st.html(PAGE_CSS + LESSON_DOTS_CSS)
    _flashes()
    classroom.maybe_sweep()
    lessons, problems = course_files.course()
    if st.query_params.get(cheatsheet.PARAM) == "1":
        cheatsheet.render(lessons)
        return
    try:
        member = classroom.membership()
    except StoreUnavailable as e:  # the class may well go on: keep it in the URL and try again shortly
        st.error(f"{e} Retrying…")
        classroom.retry_soon()
        return
    except ClassNotFound as e:  # an ended class: its followers are told so; a mistyped code is an error
        classroom.leave_class_params()
        if e.code != st.session_state.get(classroom.FOLLOWED):
            st.error(classroom.safe_error(e))
        elif (lesson := _last_followed(lessons)) is not None:  # the learner stays where the class left them
            st.info(f"Class {e.code} has ended. Its last step stays on your screen: carry on at your own pace.")
            lesson_player.render(lesson)
            return
        else:
            st.info(f"Class {e.code} has ended. The course is below: carry on at your own pace.")
        course_list(lessons, problems)
        return
    except Exception as e:  # a bad class code: the course, and a message
        st.error(classroom.safe_error(e))
        classroom.leave_class_params()
        course_list(lessons, problems)
        return
    if member is not None and not member.instructor:
        if st.query_params.get(KEY_PARAM):
            st.warning(f"This link's key does not drive class {member.code}: you follow it as a learner.")
        follower.render(member, lessons)
        return
    if member is not None:
        classroom.follow_other_window(member)
    lesson_id = st.query_params.get("lesson")
    if not lesson_id:
        if member is not None:
            class_panel.panel(member)
        course_list(lessons, problems)
        return
    lesson = next((lesson for lesson in lessons if lesson.id == lesson_id), None)
    if lesson is None:
        st.error(f"There is no lesson {safe_text.code(lesson_id)} in this course. Pick one below.")
        course_list(lessons, problems)
        return
    lesson_player.render(lesson, member)


def _last_followed(lessons: list[Lesson]) -> Lesson | None:
    """The lesson a follower last showed, its step put in the URL (the player reads it); None if there was none."""
    lesson_id, step = st.session_state.pop(classroom.FOLLOWED_AT, (None, None))
    lesson = next((lesson for lesson in lessons if lesson.id == lesson_id), None)
    if lesson is not None:
        st.query_params.update({"lesson": lesson.id, "step": str(step)})
    return lesson


def _flashes() -> None:
    show("page")


def course_list(lessons: list[Lesson], problems: list[str]) -> None:
    st.title("Lessons")
    st.caption(
        "A guided course through the live engine. Each lesson runs on this session's own engine; "
        "←/→ step through it, and the address bar is a link to the step on screen."
    )
    _join_box()
    with st.container(horizontal=True, vertical_alignment="bottom", gap="small", key="course_paths"):
        path = lesson_guide.path_chooser(lessons)
        st.button(
            "Cheat sheet",
            key="cheatsheet_open",
            icon=":material/description:",
            on_click=cheatsheet.open_sheet,
            help="One printable page: the tuning order, symptoms and fixes, the knobs, with the lessons that "
            "show each.",
        )
    for message in problems:
        st.error(f"This lesson could not be loaded: {message}")
    if not lessons and not problems:
        st.info("No lesson files found (lessons/NN-*.md).")
    for n, lesson in enumerate(lessons, 1):
        with st.container(border=True, key=f"lesson_card_{lesson.id}"):
            text, action = st.columns([6, 1], vertical_alignment="center")
            text.markdown(lesson_guide.card_text(n, lesson, path))
            action.button(
                "Open", key=f"open_{lesson.id}", on_click=lesson_player.open_lesson, args=(lesson.id,), width="stretch"
            )


def _join_box() -> None:
    if CLASS_PARAM in st.query_params:  # an instructor between lessons
        return
    with st.form("class_join", border=False):
        code_col, button_col = st.columns([2, 1], vertical_alignment="bottom")
        code = code_col.text_input(
            "Join a class", max_chars=16, placeholder="class code, e.g. K7QM2X", key="class_join_code"
        )
        if button_col.form_submit_button("Join", icon=":material/login:"):
            st.query_params.from_dict({CLASS_PARAM: code.strip()[:16]})
            st.rerun()
