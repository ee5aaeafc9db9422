"""The waiting queue per scheduling policy (``pykv.engine.sched.request_queue``): first come first served is a deque;
the priority queue leaves in (priority, arrival) order and, on equal keys, in the order a queue re-sorted stably
after every change would (pykv's rule before it had a heap)."""

from __future__ import annotations

from collections import deque

from hypothesis import given
from hypothesis import strategies as st

from pykv.border.request import Request, SamplingParams
from pykv.engine.sched.request_queue import FCFSRequestQueue, PriorityRequestQueue, create_request_queue


def _request(i: int, priority: int, arrival: float) -> Request:
    return Request(str(i), [1, 2, 3], SamplingParams(), priority=priority, arrival_time=arrival)


def test_the_policy_picks_the_queue():
    assert isinstance(create_request_queue("fcfs"), FCFSRequestQueue)
    assert isinstance(create_request_queue("priority"), PriorityRequestQueue)


def test_fcfs_prepends_to_the_front_and_pops_from_it():
    a, b, c, v, w = (_request(i, 0, float(i)) for i in range(5))
    q = FCFSRequestQueue()
    for r in (a, b, c):
        q.add_request(r)
    q.prepend_request(v)
    q.prepend_requests([w])
    assert list(q) == [w, v, a, b, c] and q.peek_request() is w and q[0] is w
    assert q.pop_request() is w and len(q) == 4
    q.remove_request(b)
    assert list(q) == [v, a, c] and b not in q and a in q


OPS = st.lists(
    st.tuples(st.sampled_from(["add", "prepend", "pop", "remove"]), st.integers(0, 2), st.integers(0, 3)),
    max_size=40,
)


@given(OPS)
def test_the_priority_queue_leaves_as_a_stably_resorted_deque_would(ops):
    """Few distinct keys, so ties are common (a request and its forked sequences share an arrival time)."""
    heap, model = PriorityRequestQueue(), deque()
    key = lambda r: (r.priority, r.arrival_time)  # noqa: E731
    for i, (op, priority, arrival) in enumerate(ops):
        if op in ("add", "prepend"):
            r = _request(i, priority, float(arrival))
            heap.add_request(r) if op == "add" else heap.prepend_request(r)
            model.append(r) if op == "add" else model.appendleft(r)
            model = deque(sorted(model, key=key))
        elif op == "pop" and model:
            assert heap.peek_request() is model[0]
            assert heap.pop_request() is model.popleft()
        elif op == "remove" and model:
            r = model[len(model) // 2]
            model.remove(r)
            heap.remove_request(r)
        assert [r.request_id for r in heap] == [r.request_id for r in model]
        assert len(heap) == len(model) and bool(heap) == bool(model)
