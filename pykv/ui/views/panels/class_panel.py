"""The instructor's side of a class: start one from a lesson, show the room its code, link and QR code,
see how many learners follow or explore, and end it.

Starting a class puts ``class`` and ``key`` (the class's secret) in this tab's URL: a reload keeps the
class, and the learners' link (``?class=CODE``) never carries the key.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

import segno
import streamlit as st

from pykv.classroom import CLASS_IDLE_S
from pykv.review_pack.deep_link import PUBLIC_URL_ENV
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
            help="This server asks for the workshop host's passphrase before a class starts: PYKV_INSTRUCTOR_KEY, "
            "or the one the server printed in its terminal when it started.",
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
                    f"it. Start the app with {PUBLIC_URL_ENV}=https://your-host (the address "
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
            st.html(qr_img(link, "width: 100%; max-width: 14rem"))
    st.caption(
        "Keep this tab's address to yourself: its `key` drives the class (a reload keeps it). Project the "
        "Projector link, which holds no key."
    )


def qr_img(link: str, style: str) -> str:
    """The link as a QR code, black on white (readable on a dark theme and a projector): an <img> of an SVG data
    URI, scaled by ``style`` (its viewBox keeps it sharp at any size). Not an inline <svg>: st.html sanitises its
    HTML (DOMPurify), which drops one and left an empty box, but keeps an image's data URI."""
    uri = segno.make(link, error="m").svg_data_uri(border=2, dark="#000", light="#fff", omitsize=True)
    alt = escape(f"QR code of {link}", quote=True)
    return f'<img src="{uri}" alt="{alt}" title="{alt}" style="display: block; {style}">'


# The projector's QR code takes what the step leaves of the screen, up to 30% of its height (at 1080p a quarter of the
# screen for the code itself, scanned from the back row; 24% at 720p, where the room sits nearer) and at least 12%:
# the text column is as tall as the screen (less PRESENTER_CSS's page padding, and a margin), every box in it keeps
# its height, and the QR code's box shrinks, a size container whose image is as tall as it is.
PROJECTOR_QR_CSS = """<style>
.st-key-lesson_text:has(.st-key-projector_join) {flex: none; height: calc(100vh - 3rem);}
.st-key-lesson_text:has(.st-key-projector_join) > * {flex-shrink: 0;}
.st-key-lesson_text > :has(> .st-key-projector_join) {flex: 0 1 30vh; min-height: 12vh; container-type: size;}
.st-key-projector_join img {height: 100cqh; width: auto;}
@media (max-height: 800px) {
  .st-key-lesson_text:has(.st-key-projector_join) {height: calc(100vh - 2.25rem);}
  .st-key-lesson_text > :has(> .st-key-projector_join) {flex-basis: 24vh;}
}
</style>"""


def join_box(code: str) -> None:
    """The projector's way into the class, at the foot of its text column: the QR code, the link and the code in the
    room's type."""
    link = classroom.learner_link(code)
    st.html(PROJECTOR_QR_CSS)
    with st.container(key="projector_join"):
        qr, words = st.columns(2, vertical_alignment="center", gap="small")  # half the text column holds the code
        qr.html(qr_img(link, ""))
        words.markdown(f"**Join the class:** scan the code, or open {link}  \nClass code **`{code}`**")


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
