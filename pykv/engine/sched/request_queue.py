"""The waiting queue, one kind per scheduling policy, as vLLM V1 keeps it (0.33.0
``vllm/v1/core/sched/request_queue.py``: ``FCFSRequestQueue``, a deque, and ``PriorityRequestQueue``, a heap, made by
``create_request_queue(policy)``). The policy is the victim policy's ``--scheduling-policy``
(``pykv.border.preemption_choices.VICTIM_POLICIES``): ``priority`` orders the queue, every other policy keeps it first
come, first served. vLLM V0 (0.6.3.post1) keeps a plain deque under every policy and sorts it itself
(``V0Scheduler``).

First come, first served::

    add_request(r)       ->  [a b c r]       pop_request() takes the front: a
    prepend_request(v)   ->  [v a b c r]     a recompute victim goes back to the front
    prepend_requests(vs) ->  reversed vs in front (deque.extendleft), as vLLM's does

Priority: requests leave in (priority, arrival_time) order, a lower priority value first; ``prepend_request`` is
``add_request`` (a victim takes its (priority, arrival) place). Equal keys (a request and the sequences it forked
share its arrival time) keep queue order: one added goes after its equals, one prepended before them, as if the queue
were re-sorted stably after each change (vLLM breaks such ties by request id instead).
"""

from __future__ import annotations

import heapq
import itertools
from abc import ABC, abstractmethod
from collections import deque
from typing import Iterable, Iterator, Literal

from pykv.border.request import Request

SchedulingPolicy = Literal["fcfs", "priority"]  # vLLM's --scheduling-policy


class RequestQueue(ABC):
    """What the scheduler asks of its waiting queue; iteration is in the order requests would leave it."""

    @abstractmethod
    def add_request(self, request: Request) -> None: ...

    @abstractmethod
    def prepend_request(self, request: Request) -> None: ...

    @abstractmethod
    def prepend_requests(self, requests: Iterable[Request]) -> None: ...

    @abstractmethod
    def peek_request(self) -> Request: ...

    @abstractmethod
    def pop_request(self) -> Request: ...

    @abstractmethod
    def remove_request(self, request: Request) -> None: ...

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __iter__(self) -> Iterator[Request]: ...

    def __bool__(self) -> bool:
        return len(self) > 0

    def __contains__(self, request: object) -> bool:
        return any(r is request for r in self)


class FCFSRequestQueue(deque[Request], RequestQueue):
    """First come, first served: a deque (indexable: ``queue[0]`` is the next to leave)."""

    def add_request(self, request: Request) -> None:
        self.append(request)

    def prepend_request(self, request: Request) -> None:
        self.appendleft(request)

    def prepend_requests(self, requests: Iterable[Request]) -> None:
        self.extendleft(requests)

    def peek_request(self) -> Request:
        return self[0]

    def pop_request(self) -> Request:
        return self.popleft()

    def remove_request(self, request: Request) -> None:
        self.remove(request)


class PriorityRequestQueue(RequestQueue):
    """A heap of ``(priority, arrival_time, tie, request)``: ``tie`` counts up for a request added and down for one
    prepended, so equal keys leave in queue order (see the module's docstring) and requests are never compared."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, float, int, Request]] = []
        self._ties = itertools.count(1)

    def _push(self, request: Request, tie: int) -> None:
        heapq.heappush(self._heap, (request.priority, request.arrival_time, tie, request))

    def add_request(self, request: Request) -> None:
        self._push(request, next(self._ties))

    def prepend_request(self, request: Request) -> None:
        self._push(request, -next(self._ties))

    def prepend_requests(self, requests: Iterable[Request]) -> None:
        for request in requests:
            self.prepend_request(request)

    def peek_request(self) -> Request:
        return self._heap[0][-1]

    def pop_request(self) -> Request:
        return heapq.heappop(self._heap)[-1]

    def remove_request(self, request: Request) -> None:
        self._heap = [entry for entry in self._heap if entry[-1] is not request]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator[Request]:
        return (entry[-1] for entry in sorted(self._heap, key=lambda e: e[:3]))


def create_request_queue(policy: SchedulingPolicy) -> RequestQueue:
    """The waiting queue for ``policy`` (0.33.0 ``create_request_queue``)."""
    return PriorityRequestQueue() if policy == "priority" else FCFSRequestQueue()
