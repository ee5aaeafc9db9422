"""Class mode plumbing: the process-wide classes (``pykv.classroom`` over the configured store), the
lessons classes share, and this session's place in a class.

    /lessons?class=K7QM2X                          a learner: the page follows the class
    /lessons?class=K7QM2X&presenter=1              the projector: a follower in large type (no key to photograph)
    /lessons?lesson=ID&step=k&class=K7QM2X&key=…   the instructor (the key is the class's secret: it alone
                                                   drives the class, and survives a reload in this URL only;
                                                   the session also keeps it, so a trip to another page or the
                                                   cheat sheet does not lose it)

Followers never play a lesson: every session of a class on this server reads the same ``SharedLesson``
(played once per process; with several replicas, once per replica), so a learner costs no engine until they
choose to explore on their own.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from pykv.classroom import CLASS_IDLE_S, HEARTBEAT_S, UNJOINED_S, ClassError, Classes, ClassState, make_store
from pykv.classroom.host_keys import HostKeys, announcement, host_keys
from pykv.classroom.limits import OPEN_STARTS, OPEN_WINDOW_S
from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.shared import SharedLesson
from pykv.review_pack.deep_link import public_root
from pykv.ui.session import state

CLASS_PARAM, KEY_PARAM = "class", "key"
SWEEP_EVERY_S = 60.0
EXPLORING = "exploring_class"  # session_state: the class code a learner explores away from (in the Playground)
KEYS = "class_keys"  # session_state: class code -> the key this session drives it with
FOLLOWED = "class_followed"  # session_state: the class code this session last followed (to say it ended)
FOLLOWED_AT = "class_followed_at"  # session_state: (lesson id, step) it last showed (where an ended class leaves it)
SYNCED = "class_synced"  # session_state: (lesson id, step) an instructor's window last showed in step with the class


@dataclass(frozen=True)
class Membership:
    """This session's class, as its URL says: ``instructor`` only with the class's own secret."""

    code: str
    state: ClassState
    instructor: bool
    secret: str | None


_keys: list[HostKeys] = []  # this process's keys, made once (a generated passphrase is printed once)
_keys_lock = threading.Lock()


def server_keys() -> HostKeys:
    """Class mode's keys for this process (pykv/classroom/host_keys.py), printed on the server's terminal the first
    time (app.py asks at server start, so the passphrase is there beside Streamlit's URL)."""
    with _keys_lock:
        if not _keys:
            _keys.append(host_keys())
            line = announcement(_keys[0])
            if line:
                print(line, file=sys.stderr, flush=True)
        return _keys[0]


def make_classes(keys: HostKeys) -> Classes:
    """The registry class mode runs on, for ``keys``: without an instructor key, starts are also held to a
    server-wide rate (OPEN_STARTS per OPEN_WINDOW_S)."""
    return Classes(
        make_store(),
        unjoined_s=UNJOINED_S,
        instructor_key=keys.instructor_key,
        admin_key=keys.admin_key,
        heartbeat_s=HEARTBEAT_S,
        open_rate=(OPEN_STARTS, OPEN_WINDOW_S) if keys.open else None,
    )


@st.cache_resource(show_spinner=False)
def classes() -> Classes:
    """One registry per process (PYKV_CLASS_STORE=redis://… shares the classes between replicas; each replica
    makes its own passphrase unless PYKV_INSTRUCTOR_KEY sets one for all)."""
    return make_classes(server_keys())


def owners() -> tuple[str, ...]:
    """Who starts a class from this session: the browser session (its anonymous id) and its client address,
    each capped at MAX_CLASSES_PER_OWNER live classes."""
    try:
        address = st.context.ip_address
    except Exception:  # bare mode (tests): no browser
        address = None
    return (f"session:{learner_id()}",) + ((f"ip:{address}",) if isinstance(address, str) and address else ())


@st.cache_resource(max_entries=16, ttl=CLASS_IDLE_S, show_spinner=False)  # a lesson no class used for 3 h goes
def _shared(path: str, mtime_ns: int, model: str, _lesson: Lesson) -> SharedLesson:
    app = state.default_config()
    return SharedLesson(_lesson, state.model_for(app), app)


_last_sweep = [0.0]  # when idle classes were last dropped (monotonic seconds; process-wide)


def maybe_sweep() -> None:
    """Drop classes idle past CLASS_IDLE_S, at most once every SWEEP_EVERY_S (any Lessons run does it)."""
    now = time.monotonic()
    if now - _last_sweep[0] >= SWEEP_EVERY_S:
        _last_sweep[0] = now
        try:
            classes().sweep_expired()
        except Exception:  # an unreachable store: the pages that need it say so
            pass


SHARED_RECHECK_S = 2.0  # a lesson's file is checked (a stat) and its cache entry looked up at most this often
_recent: dict[tuple[int, str], tuple[float, Lesson, SharedLesson]] = {}  # (id(lesson), model) -> (looked up, …)


def shared_lesson(lesson: Lesson) -> SharedLesson:
    """The lesson every class on this server reads (played again if its file changed). A class's pages all rerun
    when the instructor moves: a stat and a cache lookup each were 5% of the server's time under 100 followers."""
    key, now = (id(lesson), state.model_name()), time.monotonic()
    recent = _recent.get(key)
    if recent is not None and recent[1] is lesson and now - recent[0] < SHARED_RECHECK_S:
        return recent[2]
    try:
        mtime = Path(lesson.path).stat().st_mtime_ns
    except OSError:
        mtime = 0
    shared = _shared(str(lesson.path), mtime, key[1], lesson)
    if len(_recent) >= 32:
        _recent.clear()
    _recent[key] = (now, lesson, shared)
    return shared


def learner_id() -> str:
    """This session's anonymous id in a class (answers and presence); never shown."""
    return st.session_state.setdefault("class_learner", uuid.uuid4().hex)


def membership() -> Membership | None:
    """The class in the URL, or None (no class). A bad, unknown or ended code raises ClassError. The key a
    session once drove a class with is kept, and put back into a URL that lost it (another page, the
    cheat sheet)."""
    raw = st.query_params.get(CLASS_PARAM)
    if raw is None:
        return None
    registry = classes()
    code = registry.normalize_code(raw)
    current = registry.get(code)
    kept = st.session_state.setdefault(KEYS, {})
    secret = st.query_params.get(KEY_PARAM)
    if secret is None and code in kept and st.query_params.get("presenter") != "1":
        secret = st.query_params[KEY_PARAM] = kept[code]
    instructor = registry.is_instructor(code, secret)
    if instructor:
        kept[code] = secret
    return Membership(code, current, instructor, secret if secret else None)


def leave_class_params() -> None:
    """Drop the class from the URL (an ended class, a bad code): the page goes back to the course."""
    for name in (CLASS_PARAM, KEY_PARAM):
        if name in st.query_params:
            del st.query_params[name]


_LOOPBACK = ("localhost", "127.", "[::1]", "0.0.0.0")


def learner_link(code: str) -> str:
    """The absolute link a learner opens: under PYKV_PUBLIC_URL when the host set it, else under the address
    the instructor's browser used (which may be a loopback address the room cannot open: see loopback())."""
    root = public_root()
    if not root:
        try:
            base = (st.context.url or "").split("?")[0]
        except Exception:  # bare mode (tests): no browser URL
            base = ""
        root = base.rsplit("/", 1)[0] if base else ""
    return f"{root}/lessons?{CLASS_PARAM}={code}" if root else f"lessons?{CLASS_PARAM}={code}"


def loopback(link: str) -> bool:
    """Whether ``link`` points at this machine only (localhost, 127.x, ::1): the room cannot open it."""
    host = link.split("://", 1)[-1].split("/", 1)[0].split("@")[-1].lower()
    return host.startswith(_LOOPBACK)


def safe_error(e: Exception) -> str:
    return str(e) if isinstance(e, ClassError) else f"The class store failed: {type(e).__name__}"


def retry_soon(every_s: float = 3.0) -> None:
    """Rerun the page in ``every_s`` (the class store did not answer): the fragment's first run arms it, its
    first timer run reruns the page."""
    st.session_state.class_retry_armed = False

    @st.fragment(run_every=every_s)
    def retry() -> None:
        if st.session_state.get("class_retry_armed"):
            st.rerun()
        st.session_state.class_retry_armed = True

    retry()


def follow_other_window(member: Membership) -> None:
    """An instructor may drive from two windows (the projector and the speaker view): a window that has not
    moved since it last agreed with the class follows the class; one that moved drives it (the player)."""
    url = (st.query_params.get("lesson"), st.query_params.get("step", "1"))
    at_class = (member.state.lesson_id, str(member.state.step))
    if url != at_class and url == st.session_state.get(SYNCED):
        st.query_params["lesson"], st.query_params["step"] = at_class


def agreed(lesson_id: str, step: int) -> None:
    """This window shows the class's ``step`` of ``lesson_id`` (what follow_other_window compares with)."""
    st.session_state[SYNCED] = (lesson_id, str(step))
