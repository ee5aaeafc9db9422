"""A follower's heartbeat is batched (issue 29 #2): the page polls about once a second, but its presence is
written to the store at most once every ``heartbeat_s`` per learner and mode, so a room of followers costs the
store (and, with Redis, the network) a write per learner every few seconds instead of every second."""

from __future__ import annotations

import pytest

from pykv.classroom import HEARTBEAT_S, PRESENCE_S, Classes, ClassNotFound, MemoryStore, Presence


class CountingStore(MemoryStore):
    def __init__(self, clock) -> None:
        super().__init__(clock=clock)
        self.writes = 0

    def put_seen(self, *args, **kwargs):
        self.writes += 1
        return super().put_seen(*args, **kwargs)


@pytest.fixture
def setup(clock):
    store = CountingStore(clock)
    return Classes(store, clock=clock, heartbeat_s=HEARTBEAT_S), store, clock


def test_a_poll_every_second_writes_presence_once_per_heartbeat_period(setup):
    classes, store, clock = setup
    code = classes.start("l")[0].code
    for _ in range(20):  # 20 polls, one a second
        classes.seen(code, "a", "following")
        clock.t += 1.0
    assert store.writes == 20 // int(HEARTBEAT_S)
    assert classes.presence(code) == Presence(1, 1, 0)  # never stale in between
    assert HEARTBEAT_S * 2 < PRESENCE_S  # a lost write or two still counts the learner


def test_a_change_of_mode_or_class_is_written_at_once(setup):
    classes, store, clock = setup
    code = classes.start("l")[0].code
    classes.seen(code, "a", "following")
    classes.seen(code, "a", "exploring")
    assert store.writes == 2 and classes.presence(code) == Presence(1, 0, 1)


def test_an_ended_class_still_says_so(setup):
    classes, store, clock = setup
    state, secret = classes.start("l")
    classes.seen(state.code, "a", "following")
    classes.end(state.code, secret)
    clock.t += HEARTBEAT_S
    with pytest.raises(ClassNotFound):
        classes.seen(state.code, "a", "following")


def test_the_memory_of_heartbeats_is_bounded(setup, monkeypatch):
    from pykv.classroom import classes as classes_module

    monkeypatch.setattr(classes_module, "_MAX_KNOWN", 10)
    classes, store, clock = setup
    code = classes.start("l")[0].code
    for i in range(25):
        classes.seen(code, f"l{i}", "following")
    assert len(classes._beats) <= 10
