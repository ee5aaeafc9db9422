"""The instructor's side of a class: start one from a lesson, show the room its code, link and QR code,
see how many learners follow or explore, and end it.

Starting a class puts ``class`` and ``key`` (the class's secret) in this tab's URL: a reload keeps the
class, and the learners' link (``?class=CODE``) never carries the key.
"""

from __future__ import annotations

from urllib.parse import urlencode

import segno
import streamlit as st

from pykv.classroom import CLASS_IDLE_S
from pykv.ui.session import classroom
from pykv.ui.session.classroom import CLASS_PARAM, KEY_PARAM, Membership
from pykv.ui.session.flash import flash
from pykv.ui.views.panels import lesson_guide

PRESENCE_EVERY_S = 3.0  # the instructor's learner counts refresh this often


def start_button(lesson_id: str, step: int) -> None:
    if classroom.classes().needs_passphrase:
        st.text_input(
            "Instructor passphrase",
            key="class_passphrase",
            type="password",
            max_chars=200,
            help="This server asks for the workshop host's passphrase before a class starts.",
        )
    st.button(
        "Start a class",
        key="class_start",
        icon=":material/groups:",
        on_click=_start,
        args=(lesson_id, step),
        help="Learners who open the class link follow this lesson step by step as you move.",
    )


def _start(lesson_id: str, step: int) -> None:
    try:
        started, secret = classroom.classes().start(
            lesson_id, step, owners=classroom.owners(), passphrase=st.session_state.get("class_passphrase")
        )
    except Exception as e:  # the server's class limit, an unreachable store: a message
        flash(classroom.safe_error(e))
        return
    st.query_params[CLASS_PARAM] = started.code
    st.query_params[KEY_PARAM] = secret


def panel(member: Membership) -> None:
    """The class code in large type, the learners' link and QR code, the live counts, End class."""
    link = classroom.learner_link(member.code)
    with st.container(border=True, key="class_panel"):
        code_col, qr_col = st.columns([3, 1], vertical_alignment="center")
        with code_col:
            st.markdown(f"Class code **`{member.code}`**")
            st.markdown(f"Learners open [{link}]({link}) or type the code on the Lessons page.")
            if classroom.loopback(link):
                st.warning(
                    "This link points at this computer only (a loopback address): the room cannot open "
                    f"it. Start the app with {classroom.PUBLIC_URL_ENV}=https://your-host (the address "
                    "learners reach), or open this page through that address.",
                    icon=":material/wifi_off:",
                )
            _presence(member.code)
            with st.container(horizontal=True, gap="small"):
                # on the workshop path the projector ends each lesson (its takeaway) where the instructor does
                projector = {CLASS_PARAM: member.code, "presenter": "1"} | lesson_guide.path_params(warn=False)
                st.link_button(
                    "Projector",
                    "lessons?" + urlencode(projector),
                    icon=":material/present_to_all:",
                    help="The class in large type for the room. Its link holds no key: nothing on "
                    "the screen can drive the class.",
                )
                if "lesson" in st.query_params:
                    query = {k: st.query_params.get(k) for k in st.query_params if k != "presenter"} | {"speaker": "1"}
                    st.link_button(
                        "Speaker view",
                        "lessons?" + urlencode(query),
                        icon=":material/speaker_notes:",
                        help="Notes, answers and timing in a second window (off the projector); it moves "
                        "with this one.",
                    )
            st.button(
                "End class",
                key="class_end",
                icon=":material/stop_circle:",
                on_click=_end,
                args=(member.code, member.secret),
                help=f"Learners go back to the course. A class also ends after {CLASS_IDLE_S // 3600} h "
                "without a step.",
            )
        with qr_col:
            st.html(qr_svg(link))
    st.caption(
        "Keep this tab's address to yourself: its `key` drives the class (a reload keeps it). Project the "
        "Projector link, which holds no key."
    )


def qr_svg(link: str) -> str:
    """The link as an inline SVG QR code on white (readable on a dark theme and a projector)."""
    return segno.make(link, error="m").svg_inline(scale=4, border=2, dark="#000", light="#fff")


def _presence(code: str) -> None:
    @st.fragment(run_every=PRESENCE_EVERY_S)
    def counts() -> None:
        try:
            seen = classroom.classes().presence(code)
        except Exception as e:  # the class ended in another tab
            st.caption(classroom.safe_error(e))
            return
        st.markdown(
            f":material/group: **{seen.connected}** connected · {seen.following} following · "
            f"{seen.exploring} exploring on their own"
        )

    counts()


def _end(code: str, secret: str | None) -> None:
    try:
        classroom.classes().end(code, secret or "")
    except Exception as e:
        flash(classroom.safe_error(e))
        return
    classroom.leave_class_params()
    flash(f"Class {code} has ended.", "info")
