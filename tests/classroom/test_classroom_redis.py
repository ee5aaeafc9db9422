"""The Redis class store on a real redis-server: key TTLs, pub/sub between replicas, reconnects, errors.

(The rules themselves run on Redis too, in test_classroom.py.)
"""

from __future__ import annotations

import socket
import time

import pytest
from redis_server import wait_for

from pykv.classroom import ClassError, Classes, ClassNotFound, make_store
from pykv.classroom.redis_store import INDEX, RedisStore, key

CHOICES = ["A", "B"]


def test_every_key_of_a_class_expires_with_it(replicas, raw):
    a, _ = replicas
    state, secret = a.start("l")
    state_key = key(state.code, "state")
    assert 0.99 * a.idle_s * 1000 < raw.pttl(state_key) <= a.idle_s * 1000
    a.answer(state.code, "learner1", 1, "A", CHOICES)
    a.seen(state.code, "learner1", "following")
    held = [key(state.code, "answers:1"), key(state.code, "presence"), key(state.code, "keys")]
    assert all(0 < raw.pttl(k) <= raw.pttl(state_key) + 100 for k in held)  # copied from :state when written
    assert raw.zscore(INDEX, state.code) is not None
    raw.pexpire(state_key, 5_000)  # pretend the class has idled for hours, then the instructor acts
    for k in held:
        raw.pexpire(k, 5_000)
    a.drive(state.code, secret, step=2)
    assert all(raw.pttl(k) > 0.99 * a.idle_s * 1000 for k in [state_key, *held])
    assert secret not in str(raw.hgetall(state_key))  # only the hash is stored


def test_a_class_left_idle_is_expired_by_redis(redis_url, raw):
    store = RedisStore(redis_url)
    classes = Classes(store, idle_s=0.3)
    state, _ = classes.start("l")
    classes.seen(state.code, "learner1", "following")
    classes.answer(state.code, "learner1", 1, "A", CHOICES)
    time.sleep(0.4)
    assert raw.keys("*" + state.code + "*") == []
    assert store.get_class(state.code) is None and classes.version(state.code) is None
    with pytest.raises(ClassNotFound):
        classes.seen(state.code, "learner1", "following")  # nothing is written for an expired class
    assert raw.keys("*" + state.code + "*") == []
    assert classes.sweep_expired() == 0
    store.close()


def test_a_change_on_one_replica_reaches_the_other_by_pub_sub_within_a_second(replicas):
    a, b = replicas
    state, secret = a.start("l")
    assert b.version(state.code) == 1  # starts b's subscriber
    wait_for(lambda: b.store.feed.live)
    a.drive(state.code, secret, step=2)
    assert wait_for(lambda: b.version(state.code) == 2) < 1.0
    assert b.store.feed.cached(state.code).version == 2  # re-read by the feed on the notice
    a.drive(state.code, secret, revealed=True)
    assert (
        wait_for(lambda: b.store.feed.cached(state.code) is not None and b.store.feed.cached(state.code).version == 3)
        < 1.0
    )
    a.end(state.code, secret)
    assert wait_for(lambda: b.version(state.code) is None) < 1.0


def test_follower_polls_are_served_from_the_local_cache(replicas, monkeypatch):
    a, b = replicas
    state, secret = a.start("l")
    b.version(state.code)
    wait_for(lambda: b.store.feed.live)
    assert b.version(state.code) == 1  # read once, then cached
    reads = []
    monkeypatch.setattr(b.store._redis, "hget", lambda *args: reads.append(args))
    for _ in range(100):
        assert b.version(state.code) == 1
    a.drive(state.code, secret, step=5)
    wait_for(lambda: b.version(state.code) == 2)
    assert reads == []


def test_the_subscriber_reconnects_after_its_connection_is_killed(replicas, raw):
    a, b = replicas
    state, secret = a.start("l")
    b.version(state.code)
    wait_for(lambda: b.store.feed.live)
    epoch = b.store.feed.epoch
    assert raw.client_kill_filter(_type="pubsub") >= 1
    a.drive(state.code, secret, step=2)  # may be published while b is reconnecting: b must not miss it
    assert wait_for(lambda: b.version(state.code) == 2, timeout_s=5.0) < 5.0
    wait_for(lambda: b.store.feed.live and b.store.feed.epoch > epoch, timeout_s=5.0)
    assert b.version(state.code) == 2  # held again after the resubscription's cleared cache
    a.drive(state.code, secret, step=3)
    assert (
        wait_for(lambda: b.store.feed.cached(state.code) is not None and b.store.feed.cached(state.code).version == 3)
        < 1.0
    )


def test_close_stops_the_subscriber(redis_url, raw):
    store = RedisStore(redis_url)
    Classes(store).version("K7QM2X")
    wait_for(lambda: store.feed.live)
    thread = store.feed._thread
    store.close()
    assert not thread.is_alive() and not store.feed.live


def test_an_unreachable_redis_is_a_class_error_that_names_it_without_its_password():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    store = make_store(f"redis://:hunter2@127.0.0.1:{port}/0")
    classes = Classes(store)
    for call in (
        lambda: classes.start("l"),
        lambda: classes.get("K7QM2X"),
        lambda: classes.version("K7QM2X"),
        lambda: classes.seen("K7QM2X", "a", "following"),
    ):
        with pytest.raises(ClassError) as e:
            call()
        message = str(e.value)
        assert message.startswith(f"The class store (Redis at 127.0.0.1:{port}/0) is not reachable: ")
        assert "hunter2" not in message
    store.close()
