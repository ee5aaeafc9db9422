"""The lesson player: one lesson step by step, solo (this session's own ``LessonPlayer``) or driving a
class (the lesson every class shares, ``SharedLesson``; each step shown moves the class).

The URL is the source of truth for where the player is: Next / Prev / the progress dots / Restart
only rewrite ``step`` and the page then moves the player there (a link handed out by an instructor
does the same). The player keeps every visited step's state, so going back shows exactly what was
shown before. A step with a prediction shows its question over the state before it until it is
answered (solo) or revealed (a class). The live views are the Playground's (``live_views``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Callable
from urllib.parse import quote

import streamlit as st

from pykv.lessons.format.schema import FOCUS_VIEWS, Lesson
from pykv.lessons.run.player import LessonPlayer, StepState
from pykv.lessons.values.paths import LESSON_TARGET
from pykv.ui import safe_text
from pykv.ui.session import budgets, classroom, follow_push, seats, state
from pykv.ui.session.classroom import CLASS_PARAM, KEY_PARAM, Membership
from pykv.ui.views.panels import (
    class_panel,
    exercise_box,
    follower_views,
    kernel_view,
    lesson_guide,
    lesson_text,
    lesson_tokens,
    predict_panel,
    review_pack_button,
)
from pykv.ui.views.players import live_views, speaker_view
from pykv.ui.views.widgets.style import PRESENTER_CSS, current_dot_css

PLAYERS = "lesson_players"  # session_state: lesson id -> LessonPlayer (one per session per lesson)
LEARNER_QUEUE_PX = 200  # the queue chart's column at 1280 px, the narrowest laptop: its chips are sized to it


@dataclass(frozen=True)
class StepView:
    """How the step on screen is shown, decided once per run of the page and read by each part of it."""

    presenter: bool  # the projector view (?presenter=1): large type, no speaker notes, checks folded
    hidden: bool  # a prediction is open: the state before the step is shown and its narration held back
    at_end: bool  # the last step of the path, shown: the takeaway follows
    folded: bool  # this step adds a tokenization: on the projector the engine views fold behind its token diff


def render(lesson: Lesson, member: Membership | None = None) -> None:
    """``member``: the class this session drives (None: a solo learner on their own player)."""
    presenter = st.query_params.get("presenter") == "1"
    if presenter:
        st.html(PRESENTER_CSS)
    n = len(lesson.steps)
    wanted = _wanted_step(n)
    played = _played(lesson, wanted, member)
    if played is None:
        return
    states, index = played
    if member is not None:
        member = _drive(member, lesson.id, index + 1)
        classroom.agreed(lesson.id, index + 1)
        # the other window (speaker view) may move the class
        follow_push.follow(member.code, member.state.version, classroom.learner_id())
        classroom.shared_lesson(lesson).prefetch(index + 1)  # the next step is ready when the instructor moves
    _sync_url(lesson.id, index + 1, presenter)
    if member is not None and st.query_params.get("speaker") == "1":
        speaker_view.render(lesson, states, index, member, _go, open_lesson)
        return

    step_state: StepState = states[index]
    revealed = predict_panel.solo_revealed(lesson.id, index) if member is None else member.state.revealed
    hidden = predict_panel.hidden(step_state, revealed)
    if presenter and member is not None:  # this window's address carries the key: never the one to project
        st.warning(
            "This window's address holds the class key: project the class's keyless Projector link "
            "instead (in the class panel) and drive from here or the speaker view."
        )
    lab = (states[index - 1].lab if index else None) if hidden else step_state.lab
    path = lesson_guide.current_path(warn=False)
    view = StepView(
        presenter=presenter,
        hidden=hidden,
        at_end=not hidden and lesson_guide.neighbours(lesson, index + 1, path)[1] is None,
        folded=bool(lesson_tokens.new_tokens(states, step_state, hidden)),
    )
    # On the projector the takeaway sits under the queues, in place of the step log: the text column
    # keeps one screen. Not when the engine views are folded behind a token diff.
    aside = (
        partial(lesson_guide.end_of_lesson, lesson, path, projector=True)
        if view.presenter and view.at_end and lab is not None and not view.folded and lesson.takeaway
        else None
    )
    text_col, views_col = st.columns([3, 7] if not view.presenter else [4, 6], gap="medium")
    with text_col:
        _navigation(lesson, states, index, view, member)
        with st.container(key="lesson_text"):
            _narration(lesson, step_state, view, member)
            if view.at_end and aside is None:
                lesson_guide.end_of_lesson(lesson, path, projector=view.presenter)
    with views_col:
        if member is not None:
            class_panel.panel(member)
        if lab is None:
            st.caption("The engine has not run yet: the answer comes with this step.")
        else:
            _views(lesson, states, step_state, lab, view, member, aside)


def _views(
    lesson: Lesson,
    states: list[StepState],
    step_state: StepState,
    lab,
    view: StepView,
    member: Membership | None,
    aside: Callable[[], None] | None = None,
) -> None:
    """The engine views beside the text: ``lab`` is the step's (or, while a prediction is open, the one before);
    ``aside``: the projector's takeaway, drawn in place of the step log."""
    index = step_state.index
    link = f"lessons?lesson={quote(lesson.id)}&step={index + 1}"  # what an exported figure names
    if not view.hidden:
        lesson_tokens.render(
            step_state, lesson_tokens.new_tokens(states, step_state, view.hidden), link, view.presenter
        )
    runs = step_state.runs and not view.hidden
    if view.presenter:  # one screen for the room: the pool, the queues, this step, the side runs as a chart
        chart = (lambda: lesson_text.runs_chart(step_state, "projector_runs", projector=True)) if runs else None
        draw = partial(
            follower_views.render,
            lab,
            classroom.shared_lesson(lesson) if member else None,
            grid_height=270,
            key="projector",
            metrics_per_row=3,
            below_grid=chart,
            aside=aside,
            projector=True,
        )
        if view.folded:  # this step is about a tokenization: the engine a click away
            with st.expander("The engine at this step"):
                draw()
        else:
            draw()
        return
    if runs and lab.head == 0:  # a `configure` left the engine at step 0: the side runs are what this step measured
        lesson_text.runs_chart(step_state, "lesson_configured_runs")
        st.caption(f"The engine below was reconfigured ({_configured(lab)}) and has run no step yet.")
    focus = None if view.hidden else step_state.step.focus
    if focus:
        st.markdown(f":material/arrow_downward: **Look at {FOCUS_VIEWS[focus]}**")
    live_views.render(
        lab,
        key_prefix="lesson_",
        split=(3, 2),
        grid_height=420,
        link=link,
        modelled_target=LESSON_TARGET,  # the target the lesson's text names
        focus=focus,
        queue_width=LEARNER_QUEUE_PX,
    )
    kernel_view.expander(lab, key="lesson")


def _configured(lab) -> str:
    c = lab.config
    return f"{c.num_gpu_blocks} blocks × {c.block_size} tokens, vllm_profile={c.vllm_profile}"


def _played(lesson: Lesson, wanted: int, member: Membership | None) -> tuple[list[StepState], int] | None:
    """Every step played so far and the index on screen, or None after an st.error. A class plays the
    lesson every class shares; a solo learner their own player (Restart plays it again)."""
    if member is not None:
        try:
            with st.spinner(f"Running the lesson to step {wanted}…"):
                return classroom.shared_lesson(lesson).states(wanted - 1), wanted - 1
        except Exception as e:
            st.error(f"Could not run the lesson {safe_text.code(lesson.id)}: {safe_text.plain(e)}")
            return None
    player = _player(lesson)
    if player is None:
        return None
    try:
        if st.session_state.pop("lesson_restart", None) == lesson.id:
            with st.spinner("Restarting the lesson…"):
                player.restart()
        if player.index != wanted - 1:
            with st.spinner(f"Running the lesson to step {wanted}…"):
                player.goto(wanted - 1)
    except Exception as e:  # a broken action must not take the page down; the lesson stays navigable
        st.error(f"The lesson could not run to step {wanted}: {safe_text.plain(e)}")
    return player.states, player.index


def _drive(member: Membership, lesson_id: str, step: int) -> Membership:
    """The instructor's page shows ``step``: move the class there (followers see it within a second)."""
    if (member.state.lesson_id, member.state.step) == (lesson_id, step):
        return member
    try:
        moved = classroom.classes().drive(member.code, member.secret or "", lesson_id=lesson_id, step=step)
    except Exception as e:
        st.error(classroom.safe_error(e))
        return member
    return replace(member, state=moved)


def _wanted_step(n: int) -> int:
    raw = st.query_params.get("step", "1")
    step = state.parse_step(raw)  # ASCII digits only ("²" is no step), at most 9 of them
    if step is None:
        st.warning(f"step={safe_text.code(raw)} in the link is not a step number; showing step 1 of {n}.")
        return 1
    if not 1 <= step <= n:
        shown = min(max(step, 1), n)
        st.warning(f"This lesson has {n} steps (1 to {n}); step {step} does not exist, showing step {shown}.")
        return shown
    return step


def _player(lesson: Lesson) -> LessonPlayer | None:
    """This session's player for ``lesson`` (rebuilt if the lesson file changed); None after an st.error."""
    players = st.session_state.setdefault(PLAYERS, {})
    player = players.get(lesson.id)
    if player is None or player.lesson != lesson:
        try:
            with st.spinner(f"Starting “{lesson.title}” on the `{state.model_name()}` model…"):
                app = state.default_config()  # the app's model, device, dtype and backend, as the Playground's
                loaded = state.model_for(app)
                if "engine_seat" not in st.session_state:  # the app-wide engine cap holds for lessons too
                    seats.claim_seat(app, loaded)
                player = players[lesson.id] = LessonPlayer(
                    lesson, loaded, app, action_budget_s=budgets.LESSON_ACTION_BUDGET_S
                )
        except Exception as e:  # a missing model or a lesson config the engine refuses: a message, not a traceback
            st.error(f"Could not start the lesson {safe_text.code(lesson.id)}: {safe_text.plain(e)}")
            st.button("All lessons", key="lesson_home", on_click=open_lesson, args=(None,))
            return None
    return player


def _sync_url(lesson_id: str, step: int, presenter: bool) -> None:
    kept = {k: st.query_params[k] for k in (CLASS_PARAM, KEY_PARAM, "speaker") if k in st.query_params}
    wanted = (
        {"lesson": lesson_id, "step": str(step)}
        | ({"presenter": "1"} if presenter else {})
        | kept
        | lesson_guide.path_params()
    )
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    if current != wanted:
        st.query_params.from_dict(wanted)


def _go(step: int) -> None:
    """Navigation callbacks only move the URL; the page then moves the player there."""
    st.query_params["step"] = str(step)


def _restart(lesson_id: str) -> None:
    st.session_state.lesson_restart = lesson_id
    predict_panel.forget_solo(lesson_id)  # the questions are asked again
    st.query_params["step"] = "1"


def _toggle_presenter() -> None:
    if st.session_state.lesson_presenter:
        st.query_params["presenter"] = "1"
    elif "presenter" in st.query_params:
        del st.query_params["presenter"]


def _navigation(lesson: Lesson, states: list[StepState], index: int, view: StepView, member: Membership | None) -> None:
    n, k = len(lesson.steps), index + 1
    st.markdown(f"**{lesson.title}** · step {k} of {n}")
    if k == 1:
        lesson_guide.objective(lesson)
    before = lesson_guide.neighbours(lesson, k, lesson_guide.current_path())[0]  # ?path=core skips {optional}
    st.html(current_dot_css(k))
    with st.container(horizontal=True, gap=None, key="lesson_dots"):
        for i, step in enumerate(lesson.steps, 1):
            dot = "◉" if i == k else "●" if i < k else "○"
            st.button(
                dot,
                key=f"lesson_dot_{i}",
                type="tertiary",
                on_click=_go,
                args=(i,),
                help=lesson_guide.dot_help(i, step, i == k),
            )
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="lesson_controls"):
        st.button(
            "Prev",
            key="lesson_prev",
            shortcut="Left",
            icon=":material/arrow_back:",
            on_click=_go,
            args=(before or 1,),
            disabled=before is None,
            help="The previous step, exactly as it was (keyboard ←).",
        )
        lesson_guide.next_button(lesson, k, lesson_guide.current_path(), _go, open_lesson, keys=True)
        with (
            st.popover("More", icon=":material/more_horiz:")
            if view.presenter
            else st.container(horizontal=True, vertical_alignment="center", gap="small")
        ):  # the projector: Prev / Next only
            _more_controls(lesson, states, index, view, member)


def _more_controls(
    lesson: Lesson, states: list[StepState], index: int, view: StepView, member: Membership | None
) -> None:
    if member is None:
        st.button(
            "Restart lesson",
            key="lesson_restart_button",
            icon=":material/restart_alt:",
            on_click=_restart,
            args=(lesson.id,),
            help="Run the lesson again from its first step.",
        )
    st.button("All lessons", key="lesson_home", icon=":material/list:", on_click=open_lesson, args=(None,))
    review_pack_button.review_pack_controls(
        partial(review_pack_button.lesson_pack_maker, lesson, states[: index + 1]),
        f"pykv_review_{lesson.id}",
        "lesson",
        "this lesson, the steps played",
    )
    if member is None:
        class_panel.start_button(lesson.id, index + 1)
    st.toggle(
        "Projector view",
        value=view.presenter,
        key="lesson_presenter",
        on_change=_toggle_presenter,
        help="Large type for the room, no speaker notes, checks folded (?presenter=1 in the link). The notes "
        "and the answers are in the speaker view: start a class, then open its Speaker view link in a "
        "second window.",
    )


def _narration(lesson: Lesson, step_state: StepState, view: StepView, member: Membership | None) -> None:
    index, presenter = step_state.index, view.presenter
    lesson_guide.step_title(lesson.steps[index])
    if step_state.prediction is not None:
        if member is None:
            predict_panel.solo(lesson.id, step_state, projector=presenter)
        else:
            predict_panel.instructor(member, step_state)
    if not view.hidden:
        lesson_text.body(step_state, folded_checks=presenter)
        exercise_box.render(lesson, index, projector=presenter)  # "Your turn": the task and its Playground link
    if step_state.notes and not presenter and member is None:  # never on a projector: the speaker view has them
        with st.expander("Speaker notes"):
            st.markdown(step_state.notes)


def open_lesson(lesson_id: str | None) -> None:
    """Open a lesson (None: the course list), keeping presenter mode and an instructor's class."""
    kept = {
        k: st.query_params[k]
        for k in ("presenter", "speaker", CLASS_PARAM, KEY_PARAM, lesson_guide.PATH_PARAM)
        if k in st.query_params
    }
    st.query_params.from_dict(({"lesson": lesson_id, "step": "1"} if lesson_id else {}) | kept)
