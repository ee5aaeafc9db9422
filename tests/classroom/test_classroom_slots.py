"""Issue 29 #1: nobody can take every class slot. Classes per owner (a session, a client address) are
capped, a class nobody joined ends within minutes, ``PYKV_INSTRUCTOR_KEY`` makes starting a class need
the host's passphrase, and an operator's admin key ends any class."""

from __future__ import annotations

import pytest

from pykv.classroom import ClassError, Classes, ClassNotFound, MemoryStore
from pykv.classroom.limits import MAX_CLASSES_PER_OWNER, UNJOINED_S


def make(clock, **kw) -> Classes:
    return Classes(MemoryStore(clock=clock), clock=clock, unjoined_s=UNJOINED_S, **kw)


def test_one_session_cannot_start_more_than_its_share(clock):
    classes = make(clock)
    for _ in range(MAX_CLASSES_PER_OWNER):
        classes.start("l", owners=("session:a", "ip:10.0.0.9"))
    with pytest.raises(ClassError, match=f"already runs {MAX_CLASSES_PER_OWNER} classes"):
        classes.start("l", owners=("session:a", "ip:10.0.0.9"))
    with pytest.raises(ClassError, match="already runs"):  # a new session from the same address
        classes.start("l", owners=("session:b", "ip:10.0.0.9"))
    classes.start("l", owners=("session:c", "ip:10.0.0.10"))  # the real instructor still can


def test_an_ended_class_frees_its_owners_slot(clock):
    classes = make(clock)
    started = [classes.start("l", owners=("session:a",)) for _ in range(MAX_CLASSES_PER_OWNER)]
    state, secret = started[0]
    classes.end(state.code, secret)
    classes.start("l", owners=("session:a",))


def test_a_class_nobody_joined_ends_within_minutes(clock):
    classes = make(clock)
    lonely, _ = classes.start("l")
    clock.t += UNJOINED_S + 1
    with pytest.raises(ClassNotFound):
        classes.get(lonely.code)
    waiting, secret = classes.start("l")
    clock.t += UNJOINED_S - 1
    classes.drive(waiting.code, secret, step=2)  # an instructor's action gives it UNJOINED_S more, not hours
    clock.t += UNJOINED_S + 1
    with pytest.raises(ClassNotFound):
        classes.get(waiting.code)


def test_a_joined_class_lives_its_full_idle_time(clock):
    classes = make(clock)
    state, secret = classes.start("l")
    classes.seen(state.code, "learner1", "following")
    clock.t += UNJOINED_S * 3
    assert classes.get(state.code).step == 1
    assert classes.get(state.code).version == 1  # joining does not rerun the room


def test_an_instructor_passphrase_is_needed_to_start_when_set(clock):
    classes = make(clock, instructor_key="room-42 secret")
    assert classes.needs_passphrase
    for wrong in (None, "", "room-42"):
        with pytest.raises(ClassError, match="passphrase"):
            classes.start("l", passphrase=wrong)
    classes.start("l", passphrase="room-42 secret")


def test_an_admin_key_ends_any_class(clock):
    classes = make(clock, admin_key="operator-key-123")
    state, _ = classes.start("l")
    assert classes.is_instructor(state.code, "operator-key-123")
    classes.end(state.code, "operator-key-123")
    with pytest.raises(ClassNotFound):
        classes.get(state.code)
    assert classes.end_all("operator-key-123") == 0
    for _ in range(3):
        classes.start("l")
    with pytest.raises(ClassError, match="admin key"):
        classes.end_all("wrong")
    assert classes.end_all("operator-key-123") == 3


def test_the_step_began_when_the_class_moved_not_when_revealed(clock):
    """Issue 28 #6: the speaker view's "on this step" timer reads ``step_at``."""
    classes = make(clock)
    state, secret = classes.start("l")
    assert state.step_at == clock.t
    clock.t += 30
    moved = classes.drive(state.code, secret, step=2)
    clock.t += 20
    revealed = classes.drive(state.code, secret, revealed=True)
    assert moved.step_at == revealed.step_at == clock.t - 20
