"""Issue 29 #4 and #8: what Redis hands back is untrusted. A change notice is a hint (the replica re-reads
the class's real version, and ignores classes it does not hold); a corrupt field of a class's hash is a
logged warning and an ended class, never an exception for the room."""

from __future__ import annotations

import logging
import time

import pytest
from redis_server import wait_for

from pykv.classroom import Classes, ClassNotFound
from pykv.classroom.redis_store import CHANNEL, RedisStore, key


def test_a_forged_notice_does_not_move_the_version(replicas, raw):
    a, b = replicas
    state, secret = a.start("l")
    assert b.version(state.code) == 1
    wait_for(lambda: b.store.feed.live, timeout_s=2.0)
    raw.publish(CHANNEL, f"{state.code} 999999999")
    raw.publish(CHANNEL, f"{state.code} end")
    time.sleep(0.3)
    assert b.version(state.code) == 1 and a.version(state.code) == 1
    a.drive(state.code, secret, step=2)  # a real change still arrives
    wait_for(lambda: b.version(state.code) == 2, timeout_s=2.0)


def test_notices_for_classes_this_replica_does_not_hold_are_ignored(replicas, raw):
    _, b = replicas
    b.version("K7QM2X")
    wait_for(lambda: b.store.feed.live, timeout_s=2.0)
    for i in range(200):
        raw.publish(CHANNEL, f"Z{i:05d} 5")
    time.sleep(0.3)
    assert not any(b.store.feed.holds(f"Z{i:05d}") for i in range(200))


@pytest.mark.parametrize(
    "field, value",
    [
        ("step", "abc"),
        ("step", "0"),
        ("version", "x"),
        ("version", "-3"),
        ("revealed", "maybe"),
        ("updated_at", "nan?"),
        ("lesson_id", "../../etc"),
        ("secret_hash", "zz"),
        ("step", None),
        ("version", None),
    ],
)
def test_a_corrupt_field_ends_the_class_with_a_warning_not_an_exception(replicas, raw, field, value, caplog):
    a, b = replicas
    state, _ = a.start("l")
    if value is None:
        raw.hdel(key(state.code, "state"), field)
    else:
        raw.hset(key(state.code, "state"), field, value)
    with caplog.at_level(logging.WARNING, logger="pykv.classroom"):
        with pytest.raises(ClassNotFound):
            b.get(state.code)
    assert any(field in r.getMessage() and state.code in r.getMessage() for r in caplog.records)
    assert b.version(state.code) is None and a.version(state.code) is None
    assert raw.keys("*" + state.code + "*") == []


def test_a_corrupt_version_read_on_the_hot_path_is_none_not_a_crash(redis_url, raw):
    store = RedisStore(redis_url)
    classes = Classes(store)
    state, _ = classes.start("l")
    raw.hset(key(state.code, "state"), "version", "abc")
    store.feed.close()  # no cache: version() reads Redis
    assert classes.version(state.code) is None
    store.close()


def test_a_corrupt_presence_entry_is_skipped(replicas, raw):
    a, _ = replicas
    state, _ = a.start("l")
    a.seen(state.code, "learner1", "following")
    raw.hset(key(state.code, "presence"), "evil", "following notanumber")
    raw.hset(key(state.code, "presence"), "evil2", "dancing 1.0")
    assert a.presence(state.code).connected == 1
