"""A learner's page in a class (``/lessons?class=CODE``): it follows the instructor.

The page shows the class's lesson step from the lesson every class on this server shares (no engine of
the learner's own), and a long poll (``follow_push``) waits for the instructor to move; when they do, the
class step (a fragment) reruns on the new step. "Explore on my own" forks a private Lab at the step on
screen into the Playground; "Back to the class" there returns to the instructor's current step.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import partial

import streamlit as st

from pykv.lab.lab import Lab
from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.shared import SharedLesson
from pykv.ui import safe_text
from pykv.ui.session import classroom, follow_push, routes, seats
from pykv.ui.session.classroom import EXPLORING, Membership
from pykv.ui.views.panels import class_panel, exercise_box, follower_views, lesson_guide, lesson_text, predict_panel
from pykv.ui.views.widgets.style import PRESENTER_CSS


def render(member: Membership, lessons: list[Lesson]) -> None:
    """A learner's page, or with ``?presenter=1`` the class's projector: the same step in large type with the class's
    QR code, no answer form, no explore button and no presence (it is not a learner)."""
    projector = st.query_params.get("presenter") == "1"
    st.session_state[classroom.FOLLOWED] = member.code
    if projector:
        st.html(PRESENTER_CSS)
    st.session_state[_PAGE_MEMBER] = member  # read by this run's _class_step; its own reruns read the class
    _class_step(member.code, lessons, projector)


_PAGE_MEMBER = "class_page_member"  # session_state: the membership this page run read (for _class_step)


@st.fragment
def _class_step(code: str, lessons: list[Lesson], projector: bool) -> None:
    """Everything that changes with the class's step, the long poll included: when the instructor moves, only
    this reruns, not the app's router and the Lessons page around it (a class's pages all rerun at once: that
    was a sixth of each one's server time). A class that is gone reruns the whole page, which says so."""
    member = st.session_state.pop(_PAGE_MEMBER, None)
    if member is None or member.code != code:  # a rerun of this fragment alone: the class as it is now
        try:
            member = Membership(code, classroom.classes().get(code), instructor=False, secret=None)
        except Exception:  # ended, or an unreachable store: the page's own run says which
            st.rerun(scope="app")
    lesson = next((lesson for lesson in lessons if lesson.id == member.state.lesson_id), None)
    if lesson is None:
        st.error(
            f"Class {member.code} is on lesson {safe_text.code(member.state.lesson_id)}, which this server cannot load."
        )
        _follow(member, projector)
        return
    try:
        shared = classroom.shared_lesson(lesson)
        index = min(member.state.step, shared.num_steps) - 1
        if shared.played(index):  # nearly always (prefetched): no spinner, whose timer is a thread a run
            step_state = shared.state(index)
        else:
            with st.spinner("Catching up with the class…"):
                step_state = shared.state(index)
    except Exception as e:  # a lesson that cannot run on this server: a message, the page keeps following
        st.error(f"The class's lesson could not run here: {safe_text.plain(e)}")
        _follow(member, projector)
        return
    hidden = predict_panel.hidden(step_state, member.state.revealed)
    st.session_state[classroom.FOLLOWED_AT] = (lesson.id, index + 1)
    if _explore_requested(member.code):
        if hidden and index == 0:  # nothing ran before this step: any Lab would give its answer away
            st.info("Answer the question first: exploring opens once the instructor reveals it.")
        else:
            _explore(shared, index - 1 if hidden else index, member.code)

    where = f"**{lesson.title}** · step {index + 1} of {shared.num_steps}"
    if not projector:
        st.markdown(where)
        st.caption(f"Class `{member.code}` · your page follows the instructor.")
    text_col, views_col = st.columns([4, 6] if projector else [3, 7], gap="medium")
    # the projector's type is set on a keyed box (PRESENTER_CSS); a learner's page does without it: one element less
    room_chart = projector and not hidden and step_state.prediction is not None  # revealed: the room's answers
    with text_col, st.container(key="lesson_text") if projector else nullcontext():
        if projector:  # in the text column, as the solo projector's navigation: the views keep the screen's height
            st.markdown((f"Class `{member.code}` · " if room_chart else "") + where)  # the QR code's room is taken
        st.markdown(f"### {step_state.step.title}")
        if step_state.prediction is not None:
            predict_panel.follower(member, step_state, answering=not projector)
        if not hidden:
            words = lesson_text.PROJECTOR_WORDS - (lesson_text.ROOM_CHART_WORDS if room_chart else 0)
            lesson_text.body(step_state, folded_checks=projector, words=words)
            exercise_box.render(lesson, index, projector)  # "Your turn": its link opens a tab of the learner's own
        if projector and not room_chart:  # under the step, in the room's type: the back row scans it, latecomers join
            class_panel.join_box(member.code)
        elif not projector:
            st.button(
                "Explore on my own",
                key="class_explore",
                icon=":material/explore:",
                on_click=st.session_state.update,
                kwargs={"class_explore": member.code},
                help="Your own engine at this step in the Playground: step, go back, add requests, change "
                "knobs. Back to the class returns you to the instructor's current step.",
            )
    with views_col:
        lab = _before(shared, index) if hidden else step_state.lab
        if lab is None:
            st.caption("The engine has not run yet: the answer comes with this step.")
        elif projector:
            chart = (
                (lambda: lesson_text.runs_chart(step_state, "projector_runs", projector=True))
                if step_state.runs and not hidden
                else None
            )
            path = lesson_guide.current_path(warn=False)  # the Projector link carries the instructor's path
            last = not hidden and lesson_guide.neighbours(lesson, index + 1, path)[1] is None
            aside = (
                partial(lesson_guide.end_of_lesson, lesson, path, projector=True) if last and lesson.takeaway else None
            )  # the room sees the takeaway at the lesson's end
            follower_views.render(
                lab,
                shared,
                grid_height=270,
                key="projector",
                metrics_per_row=3,
                below_grid=chart,
                aside=aside,
                projector=True,
            )
        else:
            follower_views.render(lab, shared)
    _follow(member, projector)


def _before(shared: SharedLesson, index: int) -> Lab | None:
    """The state before step ``index``'s actions: what a prediction is made from."""
    return shared.state(index - 1).lab if index else None


def _follow(member: Membership, projector: bool = False) -> None:
    """Rerun when the instructor moves (a long poll, no timer); a learner (not the projector) counts as present
    from this run on, and each poll renews it."""
    mode = None if projector else "following"
    if mode is not None:
        try:
            classroom.classes().seen(member.code, classroom.learner_id(), mode)
        except Exception:  # full (the page still follows) or ended (its poll answers "moved": the page says so)
            pass
    follow_push.follow(member.code, member.state.version, classroom.learner_id(), mode)


def _explore_requested(code: str) -> bool:
    return st.session_state.pop("class_explore", None) == code


def _explore(shared: SharedLesson, index: int, code: str) -> None:
    """A private Lab at the class's step (a seat of the app's engine cap) and off to the Playground."""
    try:
        lab = shared.branch_lab(index)
        assert lab.loaded is not None  # set from its engine when the shared Lab was built
        seat = seats.claim_seat(lab.config, lab.loaded)
    except Exception as e:  # ServerFull: the app's engine cap
        st.error(safe_text.plain(e))
        return
    seat.labs.add(lab)
    st.session_state.lab = lab
    st.session_state[EXPLORING] = code
    st.session_state.playing = False
    st.switch_page(routes.page("playground"))


def exploring_banner(lab: Lab) -> None:
    """In the Playground while exploring away from a class: say so, keep counting as present, offer the way back."""
    code = st.session_state.get(EXPLORING)
    if not code:
        return

    @st.fragment(run_every=5.0)
    def banner() -> None:
        try:
            classroom.classes().seen(code, classroom.learner_id(), "exploring")
            note = f"You are exploring on your own, away from class `{code}`."
        except Exception as e:
            note = classroom.safe_error(e)
        col, button = st.columns([5, 1], vertical_alignment="center")
        col.info(note, icon=":material/explore:")
        if button.button("Back to the class", key="class_rejoin", icon=":material/groups:"):
            back_to_class(code)

    banner()


def back_to_class(code: str) -> None:
    lab = st.session_state.pop("lab", None)
    if lab is not None:
        lab.release()
    seat = st.session_state.get("engine_seat")
    if seat is not None and not st.session_state.get("lesson_players"):  # no engine left in this session
        seats.seats().release(seat)
        del st.session_state["engine_seat"]
    st.session_state.pop(EXPLORING, None)
    st.session_state.playing = False
    st.switch_page(routes.page("lessons"), query_params={classroom.CLASS_PARAM: code})
