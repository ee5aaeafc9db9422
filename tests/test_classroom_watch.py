"""VersionWatch (issue 29 #2): one watcher reads each watched class once per pass and wakes only the
followers whose class moved; an idle class wakes nobody, however many follow it."""

from __future__ import annotations

import time

from pykv.classroom import Classes, MemoryStore
from pykv.classroom.watch import VersionWatch


def test_an_idle_class_wakes_nobody_and_costs_one_read_per_pass():
    versions = {"AAAAAA": 1}
    watch = VersionWatch(versions.get, sleep=lambda s: None)
    woken: list[int] = []
    for i in range(300):
        watch.watch(f"s{i}", "AAAAAA", 1, lambda i=i: woken.append(i))
    for _ in range(10):
        assert watch.tick() == 0
    assert woken == [] and watch.reads == 10  # 300 followers, 10 passes: 10 reads, not 3,000 reruns


def test_a_move_wakes_that_class_only_once_each():
    versions = {"AAAAAA": 1, "BBBBBB": 4}
    watch = VersionWatch(versions.get, gap_s=0)
    woken: list[str] = []
    for i in range(3):
        watch.watch(f"a{i}", "AAAAAA", 1, lambda i=i: woken.append(f"a{i}"))
    watch.watch("b0", "BBBBBB", 4, lambda: woken.append("b0"))
    versions["AAAAAA"] = 2
    assert watch.tick() == 3 and sorted(woken) == ["a0", "a1", "a2"]
    assert watch.tick() == 0 and len(watch) == 1  # woken once; the page registers again when it reruns


def test_an_ended_class_wakes_a_broken_store_does_not():
    versions: dict[str, int] = {"AAAAAA": 1}
    watch = VersionWatch(versions.get, gap_s=0)
    woken: list[str] = []
    watch.watch("x", "AAAAAA", 1, lambda: woken.append("x"))
    watch.watch("y", "CCCCCC", 1, lambda: woken.append("y"))  # gone: version None
    assert watch.tick() == 1 and woken == ["y"]

    def broken(code: str) -> int:
        raise ConnectionError("down")
    watch2 = VersionWatch(broken)
    watch2.watch("x", "AAAAAA", 1, lambda: woken.append("x2"))
    assert watch2.tick() == 0 and "x2" not in woken


def test_one_waiter_per_session_bounded_and_a_failing_wake_is_dropped():
    watch = VersionWatch(lambda code: 2, max_waiters=5, gap_s=0)
    for i in range(8):
        watch.watch(f"s{i}", "AAAAAA", 1, lambda: 1 / 0)
    watch.watch("s7", "AAAAAA", 1, lambda: 1 / 0)  # again: replaces
    assert len(watch) == 5
    assert watch.tick() == 5 and len(watch) == 0


def test_the_thread_wakes_a_real_class_within_a_pass_or_two():
    classes = Classes(MemoryStore())
    state, secret = classes.start("l")
    watch = VersionWatch(classes.version, every_s=0.05)
    woken: list[float] = []
    watch.watch("s", state.code, state.version, lambda: woken.append(time.monotonic()))
    t0 = time.monotonic()
    classes.drive(state.code, secret, step=2)
    while not woken and time.monotonic() - t0 < 5:
        time.sleep(0.01)
    watch.close()
    assert woken and woken[0] - t0 < 1.0


def test_a_room_is_woken_paced_not_all_at_once():
    slept: list[float] = []
    watch = VersionWatch(lambda code: 2, gap_s=0.01, sleep=slept.append)
    for i in range(100):
        watch.watch(f"s{i}", "AAAAAA", 1, lambda: None)
    assert watch.tick() == 100 and slept == [0.01] * 99  # 100 reruns over ~1 s, one behind another
