"""The Lessons page: the course list, and the lesson player.

    /lessons                              the course: title, one-line summary, number of steps
    /lessons?lesson=ID&step=k             the player at step k (1-based) of lesson ID
    /lessons?lesson=ID&step=k&presenter=1 presenter mode: larger type, speaker notes shown

The URL is the source of truth for where the player is: Next / Prev / the progress dots / Restart
only rewrite ``step`` and the page then moves this session's ``LessonPlayer`` there (a link handed
out by an instructor does the same). The player keeps every visited step's state, so going back
shows exactly what was shown before. The live views are the Playground's (``live_views``).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Optional
from urllib.parse import quote

import streamlit as st

from pykv.lessons import CheckResult, Lesson, LessonPlayer, StepState, TokenDiff, load_lesson
from pykv.lessons.checks import format_short, format_value
from pykv.lessons.loader import read_course
from pykv.lessons.paths import LESSON_TARGET
from pykv.ui import budgets, kernel_view, live_views, review_pack_button, safe_text, seats, state
from pykv.ui.export_buttons import export_controls
from pykv.ui.style import LESSON_DOTS_CSS, PAGE_CSS, PRESENTER_CSS, current_dot_css
from pykv.viz.token_diff import token_diff_figure

LESSONS_DIR: Optional[Path] = None  # None: the repo's lessons/ (tests point it elsewhere)
PLAYERS = "lesson_players"  # session_state: lesson id -> LessonPlayer (one per session per lesson)
RUN_FIELDS = ("device", "steps", "output_tokens", "preemptions", "recomputed_tokens", "recompute_s", "swapped_bytes",
              "swap_s", "wall_s", "tokens_per_s", "ttft_p50_s", "tpot_p50_s")

def render() -> None:
    st.html(PAGE_CSS + LESSON_DOTS_CSS)
    lesson_id = st.query_params.get("lesson")
    lessons, problems = course()
    if not lesson_id:
        course_list(lessons, problems)
        return
    lesson = next((lesson for lesson in lessons if lesson.id == lesson_id), None)
    if lesson is None:
        st.error(f"There is no lesson {safe_text.code(lesson_id)} in this course. Pick one below.")
        course_list(lessons, problems)
        return
    player_page(lesson)


# ---- the course ------------------------------------------------------------------------------

def course() -> tuple[list[Lesson], list[str]]:
    """Every lessons/NN-*.md that loads, in order, and a message per file that does not."""
    lessons, problems = read_course(LESSONS_DIR, load=_load_current)
    return lessons, [str(e) for e in problems]  # "<file>: <field>: <problem>"


def _load_current(path: Path) -> Lesson:
    try:
        version = path.stat().st_mtime_ns
    except OSError:  # removed since the listing: load_lesson says so
        return load_lesson(path)
    return _load(str(path), version)


@st.cache_resource(max_entries=256, show_spinner=False)
def _load(path: str, mtime_ns: int) -> Lesson:
    """Parsed once per file version (a lesson edited on disk is parsed again); errors are not cached."""
    return load_lesson(Path(path))


def course_list(lessons: list[Lesson], problems: list[str]) -> None:
    st.title("Lessons")
    st.caption("A guided course through the live engine. Each lesson runs on this session's own engine; "
               "←/→ step through it, and the address bar is a link to the step on screen.")
    for message in problems:
        st.error(f"This lesson could not be loaded: {message}")
    if not lessons and not problems:
        st.info("No lesson files found (lessons/NN-*.md).")
    for n, lesson in enumerate(lessons, 1):
        with st.container(border=True, key=f"lesson_card_{lesson.id}"):
            text, action = st.columns([6, 1], vertical_alignment="center")
            steps = len(lesson.steps)
            text.markdown(f"**{n}. {lesson.title}** · {steps} step{'s' if steps != 1 else ''}  \n{lesson.summary}")
            action.button("Open", key=f"open_{lesson.id}", on_click=_open, args=(lesson.id,), width="stretch")


def _open(lesson_id: Optional[str]) -> None:
    presenter = st.query_params.get("presenter") == "1"
    st.query_params.from_dict({"lesson": lesson_id, "step": "1"} if lesson_id else {})
    if presenter:
        st.query_params["presenter"] = "1"


# ---- the player ------------------------------------------------------------------------------

def player_page(lesson: Lesson) -> None:
    presenter = st.query_params.get("presenter") == "1"
    if presenter:
        st.html(PRESENTER_CSS)
    n = len(lesson.steps)
    wanted = _wanted_step(n)
    player = _player(lesson)
    if player is None:
        return
    try:
        if st.session_state.pop("lesson_restart", None) == lesson.id:
            with st.spinner("Restarting the lesson…"):
                player.restart()
        if player.index != wanted - 1:
            with st.spinner(f"Running the lesson to step {wanted}…"):
                player.goto(wanted - 1)
    except Exception as e:  # a broken action must not take the page down; the lesson stays navigable
        st.error(f"The lesson could not run to step {wanted}: {safe_text.plain(e)}")
    _sync_url(lesson.id, player.index + 1, presenter)

    step_state: StepState = player.state
    link = f"lessons?lesson={quote(lesson.id)}&step={player.index + 1}"  # what an exported figure names
    text_col, views_col = st.columns([3, 7] if not presenter else [4, 6], gap="medium")
    with text_col:
        _navigation(lesson, player, presenter)
        with st.container(key="lesson_text"):
            _narration(lesson, player.index, step_state, presenter)
    with views_col:
        if step_state.tokens:
            earlier = player.states[player.index - 1].tokens if player.index else {}
            for name, tokens in step_state.tokens.items():
                with st.expander(f"Token diff `tokens.{name}`", expanded=earlier.get(name) is not tokens):
                    _token_diff(name, tokens, link)
        live_views.render(step_state.lab, key_prefix="lesson_", split=(1, 1) if presenter else (3, 2), grid_height=420,
                          link=link, modelled_target=LESSON_TARGET)  # the target the lesson's text names
        with st.expander("Attention kernels of this step"):
            kernel_view.render(step_state.lab, key="lesson")


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


def _player(lesson: Lesson) -> Optional[LessonPlayer]:
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
                player = players[lesson.id] = LessonPlayer(lesson, loaded, app,
                                                           action_budget_s=budgets.LESSON_ACTION_BUDGET_S)
        except Exception as e:  # a missing model or a lesson config the engine refuses: a message, not a traceback
            st.error(f"Could not start the lesson {safe_text.code(lesson.id)}: {safe_text.plain(e)}")
            st.button("All lessons", key="lesson_home", on_click=_open, args=(None,))
            return None
    return player


def _sync_url(lesson_id: str, step: int, presenter: bool) -> None:
    wanted = {"lesson": lesson_id, "step": str(step)} | ({"presenter": "1"} if presenter else {})
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    if current != wanted:
        st.query_params.from_dict(wanted)


def _go(step: int) -> None:
    """Navigation callbacks only move the URL; the page then moves the player there."""
    st.query_params["step"] = str(step)


def _restart(lesson_id: str) -> None:
    st.session_state.lesson_restart = lesson_id
    st.query_params["step"] = "1"


def _toggle_presenter() -> None:
    if st.session_state.lesson_presenter:
        st.query_params["presenter"] = "1"
    elif "presenter" in st.query_params:
        del st.query_params["presenter"]


def _navigation(lesson: Lesson, player: LessonPlayer, presenter: bool) -> None:
    n, k = len(lesson.steps), player.index + 1
    st.markdown(f"**{lesson.title}** · step {k} of {n}")
    st.html(current_dot_css(k))
    with st.container(horizontal=True, gap=None, key="lesson_dots"):
        for i, step in enumerate(lesson.steps, 1):
            dot = "◉" if i == k else "●" if i < k else "○"
            st.button(dot, key=f"lesson_dot_{i}", type="tertiary", on_click=_go,
                      args=(i,), help=f"Step {i}: {step.title}" + (" (on screen)" if i == k else ""))
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key="lesson_controls"):
        st.button("Prev", key="lesson_prev", shortcut="Left", icon=":material/arrow_back:", on_click=_go,
                  args=(k - 1,), disabled=k == 1, help="The previous step, exactly as it was (keyboard ←).")
        st.button("Next", key="lesson_next", shortcut="Right", type="primary", icon=":material/arrow_forward:",
                  on_click=_go, args=(k + 1,), disabled=k == n, help="The next step (keyboard →).")
        st.button("Restart lesson", key="lesson_restart_button", icon=":material/restart_alt:", on_click=_restart,
                  args=(lesson.id,), help="Run the lesson again from its first step.")
        st.button("All lessons", key="lesson_home", icon=":material/list:", on_click=_open, args=(None,))
        review_pack_button.review_pack_controls(review_pack_button.lesson_pack_maker(lesson, player.states),
                                                f"pykv_review_{lesson.id}", "lesson", "this lesson, the steps played")
    st.toggle("Presenter mode", value=presenter, key="lesson_presenter", on_change=_toggle_presenter,
              help="Larger type and the speaker notes (?presenter=1 in the link).")


def _narration(lesson: Lesson, index: int, step_state: StepState, presenter: bool) -> None:
    st.markdown(f"### {lesson.steps[index].title}")
    for error in step_state.errors:
        st.error(error)
    st.markdown(step_state.narration)
    if step_state.runs:
        st.markdown("**Side runs** (each run to completion on its own engine)")
        st.dataframe(_runs_rows(step_state.runs), hide_index=True, key="lesson_runs", width="stretch")
    if step_state.checks:
        st.markdown("**Checks**")
        st.markdown("\n".join(check_line(c) for c in step_state.checks))
    if presenter and step_state.notes:
        with st.container(border=True, key="lesson_notes"):
            st.markdown("**Speaker notes**")
            st.markdown(step_state.notes)
    if index + 1 == len(lesson.steps):
        st.success("End of the lesson. Restart it, or pick the next one from All lessons.")


def _token_diff(name: str, tokens: TokenDiff, link: str) -> None:
    clip = lambda text: repr(text if len(text) <= 60 else text[:59] + "…")  # noqa: E731
    st.caption(f"`tokens.{name}` · a: `{clip(tokens.a_text)}` · b: `{clip(tokens.b_text)}`")
    draw = partial(token_diff_figure, tokens.a, tokens.b, tokens.a_pieces, tokens.b_pieces,
                   block_size=tokens.block_size)
    st.plotly_chart(draw(dark=state.is_dark()), theme=None, key=f"lesson_tokens_{name}", config=live_views.PLOT_CONFIG)
    export_controls(partial(draw, dark=False), f"pykv_tokens_{name}", f"pykv lesson token diff tokens.{name} · "
                    f"a: {clip(tokens.a_text)} · b: {clip(tokens.b_text)}", link, f"lesson_tokens_{name}")


def _runs_rows(runs: dict) -> list[dict]:
    rows = []
    for name, run in runs.items():
        rows.append({"run": name} | {f: format_value(getattr(run, f)) for f in RUN_FIELDS})
    return rows


def check_line(check: CheckResult) -> str:
    """One Markdown list line: ✓/✗, what was checked, the actual value (and the expected one if it failed)."""
    if check.passed:
        line = f"- :green[✓] {check.description} — got `{format_short(check.actual)}`"
    elif check.error:
        line = f"- :red[✗ {check.description}] — {check.error}"
    else:
        line = (f"- :red[✗ {check.description}] — got `{format_short(check.actual)}`, "
                f"expected `{format_short(check.expected)}`")
    return line + (f"  \n  *{check.why}*" if check.why else "")
