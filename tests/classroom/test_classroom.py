"""Class mode's rules (pykv.classroom.Classes), on the in-memory store and on a real Redis.

Every behavioural test runs on both stores (``classes`` is parametrised); the clock is fake, so idle
expiry and presence windows are checked without sleeping (Classes applies the idle rule by its own
clock; the Redis store's own key TTLs are checked in test_classroom_redis.py).
"""

from __future__ import annotations

import hashlib
import threading

import pytest
import redis
from growth import assert_growth, raising

from pykv.classroom import (
    CLASS_IDLE_S,
    CODE_ALPHABET,
    CODE_LENGTH,
    MAX_CLASSES,
    PRESENCE_S,
    ClassError,
    Classes,
    ClassNotFound,
    ClassState,
    MemoryStore,
    NotInstructor,
    Presence,
    limits,
    make_store,
)
from pykv.classroom import classes as classes_module
from pykv.classroom.redis_store import RedisStore
from pykv.lessons.format.limits import MAX_LESSON_STEPS

BAD_CODE = "A class code is 6 letters and digits, e.g. K7QM2X."
CHOICES = ["A", "B", "C"]


@pytest.fixture(params=["memory", "redis"])
def classes(request, clock):
    if request.param == "memory":
        store = MemoryStore(clock=clock)
    else:
        url = request.getfixturevalue("redis_url")
        redis.Redis.from_url(url).flushdb()
        store = RedisStore(url)
    yield Classes(store, clock=clock)
    store.check_invariants()
    store.close()


# ---- codes -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", ["k7qm2x", " K7QM2X ", "k7qm-2x", "K7 QM 2X", "k-7-q-m-2-x", "\tk7qm2x\n"])
def test_a_typed_code_forgives_case_blanks_and_dashes(raw):
    assert Classes.normalize_code(raw) == "K7QM2X"


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "K7QM2",
        "K7QM2XX",
        "K0QM2X",
        "K7QM1X",
        "K7QMIX",
        "K7QM_X",
        "K7QM\t2X",
        "K7QM2X\x00",
        "ＫＸＱＭ２Ｘ",
        "K7QM2É",
        "ß7QM2X",
        "K" * 10_000,
        "-" * 10_000 + "K7QM2X",
        None,
        123456,
        b"K7QM2X",
        ["K7QM2X"],
    ],
)
def test_anything_else_is_not_a_code(raw):
    with pytest.raises(ClassError) as e:
        Classes.normalize_code(raw)
    assert str(e.value) == BAD_CODE


def test_normalizing_a_huge_input_does_no_work_proportional_to_it():
    class Untouchable(str):
        def strip(self, *args):
            raise AssertionError("an over-long input was worked on")

    with pytest.raises(ClassError):
        Classes.normalize_code(Untouchable(" " * 5_000_000 + "K7QM2X"))
    assert_growth(lambda n: "k7qm2x" * n, raising(Classes.normalize_code, ClassError), 50_000, factor=100, max_ratio=3)


def test_the_limits_the_ui_states():
    assert (CODE_ALPHABET, CODE_LENGTH, CLASS_IDLE_S, PRESENCE_S, MAX_CLASSES) == (
        "ABCDEFGHJKLMNPQRSTUVWXYZ23456789",
        6,
        3 * 3600,
        15,
        50,
    )
    assert limits.MAX_STEP == MAX_LESSON_STEPS


# ---- start, get, drive ----------------------------------------------------------------------------------
def test_start_gives_a_fresh_code_and_a_secret_only_its_hash_is_stored(classes, clock):
    state, secret = classes.start("recompute-is-a-rollback")
    assert state == ClassState(
        code=state.code,
        lesson_id="recompute-is-a-rollback",
        step=1,
        revealed=False,
        version=1,
        created_at=clock.t,
        updated_at=clock.t,
        step_at=clock.t,
    )
    assert len(state.code) == CODE_LENGTH and set(state.code) <= set(CODE_ALPHABET)
    assert len(secret) >= 20
    record = classes.store.get_class(state.code)
    assert record.secret_hash == hashlib.sha256(secret.encode()).hexdigest() and secret not in repr(record)
    assert classes.get(state.code.lower()) == state and classes.version(state.code) == 1
    other, other_secret = classes.start("recompute-is-a-rollback", step=3)
    assert other.code != state.code and other_secret != secret and other.step == 3


@pytest.mark.parametrize(
    "bad",
    [
        dict(lesson_id=""),
        dict(lesson_id="x" * 101),
        dict(lesson_id="../etc/passwd"),
        dict(lesson_id=None),
        dict(step=0),
        dict(step=-1),
        dict(step=True),
        dict(step="2"),
        dict(step=1.0),
        dict(step=MAX_LESSON_STEPS + 1),
    ],
)
def test_start_refuses_bad_lessons_and_steps(classes, bad):
    with pytest.raises(ClassError):
        classes.start(**{"lesson_id": "l", **bad})


def test_drive_bumps_the_version_only_on_a_change(classes, clock):
    state, secret = classes.start("l")
    clock.advance(10)
    s2 = classes.drive(state.code, secret, step=2)
    assert (s2.step, s2.version, s2.updated_at, s2.created_at) == (2, 2, clock.t, state.created_at)
    clock.advance(10)
    assert classes.drive(state.code, secret, step=2) == s2  # nothing changed: same version, same updated_at
    assert classes.drive(state.code, secret) == s2
    s3 = classes.drive(state.code, secret, revealed=True)
    assert (s3.revealed, s3.version, s3.updated_at) == (True, 3, clock.t)
    assert classes.get(state.code) == s3 and classes.version(state.code) == 3


def test_changing_step_or_lesson_closes_the_reveal_unless_told(classes):
    state, secret = classes.start("l")
    assert classes.drive(state.code, secret, revealed=True).revealed
    s = classes.drive(state.code, secret, step=2)
    assert not s.revealed and s.version == 3
    assert classes.drive(state.code, secret, step=3, revealed=True).revealed
    s = classes.drive(state.code, secret, lesson_id="other")
    assert (s.lesson_id, s.step, s.revealed) == ("other", 3, False)
    s = classes.drive(state.code, secret, revealed=True)
    assert classes.drive(state.code, secret, step=3).version == s.version  # same step: no change


@pytest.mark.parametrize(
    "bad", [dict(step=0), dict(step=-3), dict(step=None, lesson_id="a b"), dict(revealed=1), dict(step=10**30)]
)
def test_drive_refuses_bad_values(classes, bad):
    state, secret = classes.start("l")
    with pytest.raises(ClassError):
        classes.drive(state.code, secret, **bad)
    assert classes.get(state.code) == state


def test_a_forged_secret_is_not_the_instructor(classes):
    state, secret = classes.start("l")
    other, other_secret = classes.start("l")
    for forged in ["", "x", secret[:-1], secret + "x", other_secret, "é" * 50, "\ud800", "s" * 100_000]:
        with pytest.raises(NotInstructor) as e:
            classes.drive(state.code, forged, step=2)
        assert len(forged) < 8 or forged[:20] not in str(e.value)
        with pytest.raises(NotInstructor):
            classes.end(state.code, forged)
        assert not classes.is_instructor(state.code, forged)
    with pytest.raises(NotInstructor):
        classes.drive(state.code, None, step=2)
    assert classes.is_instructor(state.code, secret) and not classes.is_instructor(state.code, None)
    assert not classes.is_instructor("garbage!", secret) and not classes.is_instructor("ZZZZZZ", secret)
    assert classes.get(state.code) == state


def test_unknown_ended_and_expired_classes_are_not_found(classes, clock):
    with pytest.raises(ClassNotFound) as e:
        classes.get("k7qm-2x")
    assert str(e.value) == (
        "No class K7QM2X is running (it may have ended or expired). Ask your instructor for the code."
    )
    assert classes.version("K7QM2X") is None
    state, secret = classes.start("l")
    classes.end(state.code, secret)
    for call in (
        lambda: classes.get(state.code),
        lambda: classes.drive(state.code, secret, step=2),
        lambda: classes.end(state.code, secret),
        lambda: classes.presence(state.code),
        lambda: classes.seen(state.code, "a", "following"),
        lambda: classes.tally(state.code, 1),
        lambda: classes.answer(state.code, "a", 1, "A", CHOICES),
    ):
        with pytest.raises(ClassNotFound):
            call()
    assert classes.version(state.code) is None and not classes.is_instructor(state.code, secret)


def test_a_class_expires_idle_s_after_the_last_instructor_action(classes, clock):
    state, secret = classes.start("l")
    clock.advance(CLASS_IDLE_S - 60)
    classes.seen(state.code, "learner1", "following")  # learners do not keep a class alive
    classes.drive(state.code, secret, step=2)  # the instructor does
    clock.advance(CLASS_IDLE_S - 1)
    assert classes.get(state.code).step == 2
    classes.drive(state.code, secret, step=2)  # a drive that changes nothing is not an action
    clock.advance(1)
    with pytest.raises(ClassNotFound):
        classes.get(state.code)
    with pytest.raises(ClassNotFound):
        classes.drive(state.code, secret, step=3)


def test_sweep_expired_drops_idle_classes_from_memory(clock):
    store = MemoryStore(clock=clock)
    classes = Classes(store, idle_s=100, clock=clock)
    old, _ = classes.start("l")
    clock.advance(60)
    young, _ = classes.start("l")
    clock.advance(50)
    assert classes.sweep_expired() == 1
    assert not store.holds(old.code) and store.holds(young.code)
    assert classes.version(old.code) is None and classes.version(young.code) == 1


# ---- answers ---------------------------------------------------------------------------------------------
def test_answers_count_once_per_learner_and_the_last_one_wins(classes):
    state, secret = classes.start("l")
    for _ in range(20):
        classes.answer(state.code, "spammer", 1, "A", CHOICES)
    classes.answer(state.code, "spammer", 1, "C", CHOICES)
    classes.answer(state.code, "b", 1, "C", CHOICES)
    classes.answer(state.code, "c", 1, "B", CHOICES)
    assert classes.tally(state.code, 1) == {"C": 2, "B": 1}
    assert classes.answer_of(state.code, "spammer", 1) == "C" and classes.answer_of(state.code, "d", 1) is None
    assert classes.tally(state.code, 2) == {} and classes.answer_of(state.code, "b", 2) is None


def test_answers_only_to_the_open_question_on_screen(classes):
    state, secret = classes.start("l")
    with pytest.raises(ClassError, match="not one of this question's choices"):
        classes.answer(state.code, "a", 1, "D", CHOICES)
    with pytest.raises(ClassError, match="step 2, but the class has moved on to step 1"):
        classes.answer(state.code, "a", 2, "A", CHOICES)
    classes.drive(state.code, secret, step=2)
    with pytest.raises(ClassError, match="moved on to step 2"):
        classes.answer(state.code, "a", 1, "A", CHOICES)
    classes.answer(state.code, "a", 2, "A", CHOICES)
    classes.drive(state.code, secret, revealed=True)
    with pytest.raises(ClassError, match="revealed"):
        classes.answer(state.code, "b", 2, "B", CHOICES)
    assert classes.tally(state.code, 2) == {"A": 1}
    classes.drive(state.code, secret, step=1)
    classes.drive(state.code, secret, step=2)  # back on step 2: its question is open again
    classes.answer(state.code, "b", 2, "B", CHOICES)
    assert classes.tally(state.code, 2) == {"A": 1, "B": 1}


def test_a_new_lesson_starts_without_the_old_lessons_answers(classes):
    state, secret = classes.start("l", step=2)
    classes.answer(state.code, "a", 2, "A", CHOICES)
    classes.drive(state.code, secret, lesson_id="m")
    assert classes.tally(state.code, 2) == {} and classes.answer_of(state.code, "a", 2) is None


@pytest.mark.parametrize(
    "learner, choice, choices",
    [
        ("", "A", CHOICES),
        ("x" * 65, "A", CHOICES),
        ("a b", "A", CHOICES),
        (None, "A", CHOICES),
        ("a", None, CHOICES),
        ("a", "A", "ABC"),
        ("a", "A", []),
        ("a", "A", ["A"] * 27),
        ("a", "A", ["A", 3]),
        ("a", "A" * 300, ["A" * 300]),
    ],
)
def test_answers_refuse_bad_ids_and_questions(classes, learner, choice, choices):
    state, _ = classes.start("l")
    with pytest.raises(ClassError):
        classes.answer(state.code, learner, 1, choice, choices)
    assert classes.tally(state.code, 1) == {}


def test_a_class_answers_for_at_most_max_learners(classes, monkeypatch):
    monkeypatch.setattr(classes_module, "MAX_LEARNERS", 3)
    state, _ = classes.start("l")
    for learner in "abc":
        classes.answer(state.code, learner, 1, "A", CHOICES)
    with pytest.raises(ClassError, match="full"):
        classes.answer(state.code, "d", 1, "A", CHOICES)
    classes.answer(state.code, "a", 1, "B", CHOICES)  # a learner already counted may change their mind
    assert classes.tally(state.code, 1) == {"A": 2, "B": 1}


# ---- presence ------------------------------------------------------------------------------------------------
def test_presence_counts_learners_seen_within_the_window(classes, clock):
    state, _ = classes.start("l")
    assert classes.presence(state.code) == Presence(0, 0, 0)
    classes.seen(state.code, "a", "following")
    classes.seen(state.code, "b", "following")
    clock.advance(PRESENCE_S - 5)
    classes.seen(state.code, "c", "exploring")
    classes.seen(state.code, "a", "exploring")  # a switches: counted once, by the last mode
    assert classes.presence(state.code) == Presence(connected=3, following=1, exploring=2)
    clock.advance(5)  # b was last seen PRESENCE_S ago
    assert classes.presence(state.code) == Presence(connected=2, following=0, exploring=2)
    assert set(classes.store.seen_all(state.code)) == {"a", "c"}  # b's heartbeat was dropped
    clock.advance(PRESENCE_S)
    assert classes.presence(state.code) == Presence(0, 0, 0)
    with pytest.raises(ClassError, match="following or exploring"):
        classes.seen(state.code, "a", "lurking")


def test_a_full_class_makes_room_for_newcomers_by_dropping_stale_learners(classes, clock, monkeypatch):
    monkeypatch.setattr(classes_module, "MAX_LEARNERS", 2)
    state, _ = classes.start("l")
    classes.seen(state.code, "a", "following")
    classes.seen(state.code, "b", "following")
    with pytest.raises(ClassError, match="full"):
        classes.seen(state.code, "c", "following")
    clock.advance(PRESENCE_S)
    classes.seen(state.code, "b", "following")
    classes.seen(state.code, "c", "following")  # a is stale: dropped to make room
    assert classes.presence(state.code) == Presence(2, 2, 0)


# ---- the store's bounds and lifetime ---------------------------------------------------------------------------
def test_at_most_max_classes_per_store(classes):
    started = [classes.start("l") for _ in range(MAX_CLASSES)]
    with pytest.raises(ClassError, match=f"server is full: it already runs {MAX_CLASSES} classes"):
        classes.start("l")
    code, secret = started[7][0].code, started[7][1]
    classes.end(code, secret)
    classes.start("l")


def test_end_frees_everything_the_class_holds(classes):
    state, secret = classes.start("l")
    classes.seen(state.code, "a", "following")
    classes.answer(state.code, "a", 1, "A", CHOICES)
    classes.drive(state.code, secret, step=2)
    classes.answer(state.code, "a", 2, "B", CHOICES)
    assert classes.store.holds(state.code)
    classes.end(state.code, secret)
    assert not classes.store.holds(state.code)
    assert classes.store.answers(state.code, 2) == {} and classes.store.seen_all(state.code) == {}


def test_concurrent_tabs_answer_and_drive_without_losing_writes(classes):
    state, secret = classes.start("l")
    errors: list[BaseException] = []

    def learners(prefix: str) -> None:
        try:
            for i in range(15):
                classes.answer(state.code, f"{prefix}{i}", 1, CHOICES[i % 3], CHOICES)
                classes.seen(state.code, f"{prefix}{i}", "following")
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=learners, args=(p,)) for p in "pqrs"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(classes.tally(state.code, 1).values()) == 60 and classes.presence(state.code).connected == 60

    versions: list[int] = []

    def instructor(step: int) -> None:
        versions.append(classes.drive(state.code, secret, step=step).version)

    threads = [threading.Thread(target=instructor, args=(s,)) for s in range(2, 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(versions) == list(range(2, 8)) and classes.version(state.code) == 7


# ---- choosing a store ------------------------------------------------------------------------------------------
def test_make_store_reads_pykv_class_store(monkeypatch):
    monkeypatch.delenv("PYKV_CLASS_STORE", raising=False)
    assert isinstance(make_store(), MemoryStore)
    monkeypatch.setenv("PYKV_CLASS_STORE", "memory")
    assert isinstance(make_store(), MemoryStore)
    monkeypatch.setenv("PYKV_CLASS_STORE", "redis://:hunter2@127.0.0.1:1/3")
    store = make_store()  # no connection until it is used
    assert isinstance(store, RedisStore) and store.where == "127.0.0.1:1/3"
    store.close()
    assert isinstance(make_store("memory"), MemoryStore)
    for bad in ["postgres://:hunter2@db/1", "redis", "mem"]:
        with pytest.raises(ClassError, match="PYKV_CLASS_STORE must be 'memory' or a Redis URL") as e:
            make_store(bad)
        assert "hunter2" not in str(e.value)
