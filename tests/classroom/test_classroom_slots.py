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


# ---- issue 50 #1: one visitor behind a same-host proxy or tunnel ------------------------------------------------


def test_refused_starts_never_free_an_address_at_its_cap(clock):
    """10,000 refused starts (each a new tab: a new session) once filled the owner memory, which was then cleared,
    and the address at its cap started 3 more."""
    classes = make(clock)
    for _ in range(MAX_CLASSES_PER_OWNER):
        classes.start("l", owners=("session:first", "ip:10.0.0.9"))
    for i in range(10_001):
        with pytest.raises(ClassError, match="already runs"):
            classes.start("l", owners=(f"session:tab{i}", "ip:10.0.0.9"))
    classes.start("l", owners=("session:other", "ip:10.0.0.10"))  # someone else's start (the old clear ran here)
    with pytest.raises(ClassError, match="already runs"):
        classes.start("l", owners=("session:late", "ip:10.0.0.9"))
    assert len(classes._owned) <= 4  # owners with a live class only, not one per refused tab


def test_the_owner_memory_keeps_every_owner_with_a_live_class(clock, monkeypatch):
    from pykv.classroom import classes as classes_module

    monkeypatch.setattr(classes_module, "_MAX_KNOWN", 8)
    classes = make(clock)
    for _ in range(MAX_CLASSES_PER_OWNER):
        classes.start("l", owners=("ip:10.0.0.9",))
    for i in range(20):  # many owners whose classes ended: pruned, the capped one kept
        state, secret = classes.start("l", owners=(f"session:s{i}",))
        classes.end(state.code, secret)
    with pytest.raises(ClassError, match="already runs"):
        classes.start("l", owners=("ip:10.0.0.9",))


def test_a_server_has_a_passphrase_unless_its_host_opts_out():
    from pykv.classroom.host_keys import announcement, host_keys

    made = host_keys({})
    assert made.generated and made.instructor_key and len(made.instructor_key) >= 12
    assert made.instructor_key in (announcement(made) or "")
    assert host_keys({}).instructor_key != made.instructor_key  # a fresh one per process
    chosen = host_keys({"PYKV_INSTRUCTOR_KEY": "room 42"})
    assert chosen.instructor_key == "room 42" and not chosen.generated and announcement(chosen) is None
    opened = host_keys({"PYKV_OPEN_CLASSES": "1", "PYKV_ADMIN_KEY": "op"})
    assert opened.open and opened.admin_key == "op" and "anyone" in (announcement(opened) or "")


def test_seventeen_tabs_without_the_passphrase_start_nothing(clock):
    """17 sessions behind a same-host proxy (no client address) started all 50 classes in 44 s; by default a
    server now has a passphrase, and the instructor who has it still starts a class."""
    from pykv.classroom.host_keys import host_keys

    keys = host_keys({})
    classes = make(clock, instructor_key=keys.instructor_key, admin_key=keys.admin_key)
    assert classes.needs_passphrase
    for tab in range(17):
        for _ in range(MAX_CLASSES_PER_OWNER):
            with pytest.raises(ClassError, match="passphrase"):
                classes.start("l", owners=(f"session:tab{tab}",))
    assert classes.store.codes() == []
    classes.start("l", owners=("session:instructor",), passphrase=keys.instructor_key)


def test_without_a_key_starts_are_held_to_a_server_wide_rate(clock):
    from pykv.classroom.limits import MAX_CLASSES, OPEN_STARTS, OPEN_WINDOW_S

    classes = make(clock, open_rate=(OPEN_STARTS, OPEN_WINDOW_S))
    started = 0
    for tab in range(17):
        for _ in range(MAX_CLASSES_PER_OWNER):
            try:
                classes.start("l", owners=(f"session:tab{tab}",))
                started += 1
            except ClassError as e:
                assert "classes every 10 minutes" in str(e)
    assert started == OPEN_STARTS < MAX_CLASSES
    clock.t += OPEN_WINDOW_S
    classes.start("l", owners=("session:later",))  # the window moved on


def test_the_admin_key_starts_a_class_on_a_server_with_a_passphrase(clock):
    classes = make(clock, instructor_key="room-42 secret", admin_key="operator-key-123")
    classes.start("l", passphrase="operator-key-123")
