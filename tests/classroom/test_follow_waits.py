"""FollowWaits: a class page's long poll is answered when the class moves, costs one version read per class
per period however many pages wait, names only tickets a page run issued, and holds a bounded number of polls."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from starlette.requests import Request

from pykv.classroom.follow_waits import Answer, FollowWaits
from pykv.ui.session import follow_push


class Versions:
    """A store's versions, counting the reads (the idle cost of a waiting class)."""

    def __init__(self, **versions):
        self.versions, self.reads = dict(versions), 0

    def __call__(self, code):
        self.reads += 1
        return self.versions.get(code)


def run(coro):
    """On a thread of its own: a browser test in the same worker leaves Playwright's event loop running here."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(coro, 20)).result()


def get_route(query: bytes) -> tuple[int, dict]:
    """The app's long-poll route asked ``GET PATH?query``: its status and JSON body."""
    scope = {"type": "http", "method": "GET", "path": follow_push.PATH, "query_string": query, "headers": []}
    response = run(follow_push._follow_endpoint(Request(scope)))
    return response.status_code, json.loads(response.body)


def test_a_held_poll_is_answered_as_soon_as_its_class_moves():
    versions = Versions(K7QM2X=3)
    waits = FollowWaits(versions, timeout_s=10.0, every_s=0.02)
    token = waits.issue("K7QM2X", 3, "learner-1", "following")

    async def scenario():
        poll = asyncio.create_task(waits.wait(token))
        await asyncio.sleep(0.2)
        assert not poll.done(), "answered while the class stood still"
        moved_at = time.monotonic()
        versions.versions["K7QM2X"] = 4
        assert await poll is Answer.MOVED
        return time.monotonic() - moved_at

    assert run(scenario()) < 0.5
    waits.check_invariants()


def test_an_unmoved_class_answers_not_moved_after_the_timeout_and_an_ended_one_moved():
    versions = Versions(K7QM2X=3)
    waits = FollowWaits(versions, timeout_s=0.2, every_s=0.02)
    token = waits.issue("K7QM2X", 3, "projector")
    assert run(waits.wait(token)) is Answer.SAME
    versions.versions.pop("K7QM2X")  # ended: its version is None
    assert run(waits.wait(token)) is Answer.MOVED
    assert run(waits.wait(waits.issue("K7QM2X", None, "projector"))) is Answer.SAME  # the page shows the end
    waits.check_invariants()


def test_many_waiting_pages_cost_one_read_per_class_per_period():
    versions = Versions(K7QM2X=1, ABCDEF=1)
    waits = FollowWaits(versions, timeout_s=0.5, every_s=0.05)
    tokens = [waits.issue("K7QM2X", 1, f"learner-{i}", "following") for i in range(200)]
    tokens.append(waits.issue("ABCDEF", 1, "projector"))

    async def scenario():
        polls = [asyncio.create_task(waits.wait(token)) for token in tokens]
        while waits.held < len(tokens):  # each page's first poll marks it present, in a worker thread
            await asyncio.sleep(0.01)
        return await asyncio.gather(*polls)

    assert run(scenario()) == [Answer.SAME] * len(tokens)
    periods = 0.5 / 0.05
    assert versions.reads <= 2 * (periods + 3), versions.reads  # 2 classes, not 201 pages
    assert waits.held == 0
    waits.check_invariants()


def test_a_poll_names_only_a_ticket_a_page_run_issued():
    seen = []
    waits = FollowWaits(Versions(K7QM2X=1), mark_seen=lambda *beat: seen.append(beat), timeout_s=0.1, every_s=0.02)
    assert run(waits.wait("made-up-token")) is Answer.UNKNOWN  # the page asks again, then reruns for one
    assert seen == []
    token = waits.issue("K7QM2X", 1, "learner-1", "following")
    assert token == waits.issue("K7QM2X", 1, "learner-1", "following")  # a rerun keeps its ticket
    assert token != waits.issue("K7QM2X", 1, "learner-2", "following")
    assert waits.issue("K7QM2X", 1, "learner-1") != token  # the same session's other window: a ticket of its own
    assert run(waits.wait(token)) is Answer.SAME
    assert run(waits.wait(token)) is Answer.SAME
    assert seen == [("K7QM2X", "learner-1", "following")]  # a poll renews presence, once per mark_every_s


def test_a_full_class_keeps_its_pages_waiting_and_a_failing_store_moves_them():
    def full(*_):
        raise RuntimeError("Class K7QM2X is full")

    waits = FollowWaits(Versions(K7QM2X=1), mark_seen=full, timeout_s=0.1, every_s=0.02)
    token = waits.issue("K7QM2X", 1, "learner-201", "following")
    assert run(waits.wait(token)) is Answer.SAME  # not a rerun loop for the 201st learner

    def unreachable(_):
        raise ConnectionError("redis is down")

    broken = FollowWaits(unreachable, timeout_s=5.0, every_s=0.02)
    assert run(broken.wait(broken.issue("K7QM2X", 1, "projector"))) is Answer.MOVED  # the page says what is wrong


def test_tickets_and_held_polls_are_bounded():
    clock = [0.0]
    waits = FollowWaits(
        Versions(K7QM2X=1),
        timeout_s=0.2,
        every_s=0.02,
        max_tickets=3,
        max_waiters=2,
        ticket_ttl_s=60.0,
        monotonic=lambda: clock[0],
    )
    first = waits.issue("K7QM2X", 1, "a", "following")
    for learner in "bcdef":
        clock[0] += 1.0
        waits.issue("K7QM2X", 1, learner, "following")
        waits.check_invariants()
    assert waits.ticket(first) is None  # the least recently used went first
    clock[0] += 61.0
    waits.issue("K7QM2X", 1, "g", "following")  # a full table forgets the unused ones first
    waits.check_invariants()
    tokens = [waits.issue("K7QM2X", 1, learner, "following") for learner in "ghi"]

    async def scenario():
        held = [asyncio.create_task(waits.wait(token)) for token in tokens[:2]]
        await asyncio.sleep(0.05)
        busy = await waits.wait(tokens[2])
        return busy, await asyncio.gather(*held)

    assert run(scenario()) == (Answer.BUSY, [Answer.SAME, Answer.SAME])


@pytest.mark.parametrize(
    "query, status",
    [
        (b"ticket=x", 404),
        (b"ticket=" + b"x" * 5000, 400),
        (b"ticket=", 400),
        (b"version=none", 400),
        (b"", 400),
    ],
)
def test_the_route_answers_hostile_queries_in_one_line(query, status):
    answered, body = get_route(query)
    assert answered == status
    assert 0 < len(body["error"]) < 80


def test_a_moved_class_answers_its_pages_in_waves_as_they_come_back():
    versions = Versions(K7QM2X=1)
    waits = FollowWaits(versions, timeout_s=5.0, every_s=0.01, wave=10, wave_gap_s=1.0)
    tokens = [waits.issue("K7QM2X", 1, f"learner-{i}", "following") for i in range(30)]

    async def scenario():
        polls = [asyncio.create_task(waits.wait(token)) for token in tokens]
        while waits.held < len(tokens):
            await asyncio.sleep(0.01)
        versions.versions["K7QM2X"] = 2
        await asyncio.sleep(0.3)
        first = [poll for poll in polls if poll.done()]
        assert len(first) == 10, "one wave, then it waits for those pages to come back"
        back = [
            asyncio.create_task(waits.wait(waits.issue("K7QM2X", 2, f"learner-{polls.index(poll)}", "following")))
            for poll in first[:5]
        ]
        await asyncio.sleep(0.3)
        assert sum(poll.done() for poll in polls) == 20, "half of the first wave back: the second wave"
        rest = await asyncio.gather(*polls)  # the third after wave_gap_s even if nobody comes back
        for poll in back:
            poll.cancel()
        return rest

    started = time.monotonic()
    assert run(scenario()) == [Answer.MOVED] * 30
    assert time.monotonic() - started < 3.0


def test_the_route_answers_a_page_whose_class_moved(monkeypatch):
    monkeypatch.setattr(follow_push, "_waits", FollowWaits(Versions(K7QM2X=2), every_s=0.01, timeout_s=0.2))
    for version, moved in ((1, True), (2, False)):
        token = follow_push.waits().issue("K7QM2X", version, "projector")
        assert get_route(b"ticket=" + token.encode()) == (200, {"moved": moved})


def test_a_poll_cannot_name_a_stale_version_nor_hold_more_than_one_wait_per_ticket():
    versions = Versions(K7QM2X=5)
    waits = FollowWaits(versions, timeout_s=2.0, every_s=0.01)
    token = waits.issue("K7QM2X", 5, "learner-1", "following")

    async def scenario():
        first = asyncio.create_task(waits.wait(token))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(waits.wait(token))  # an abandoned poll, or a second loop: the older gives way
        assert await first is Answer.SAME
        await asyncio.sleep(0.05)
        assert waits.held == 1 and not second.done()
        versions.versions["K7QM2X"] = 4  # a replica's cache behind the page: not a move
        await asyncio.sleep(0.1)
        assert not second.done()
        versions.versions["K7QM2X"] = 6
        return await second

    assert run(scenario()) is Answer.MOVED
    waits.check_invariants()
