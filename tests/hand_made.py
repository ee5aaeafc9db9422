"""Hand-made border types for the figure tests (tests/viz): a block, a request, a snapshot of them, each with
every field a figure reads and nothing an engine would have to run for."""

from __future__ import annotations

from pykv.border.snapshot import BlockView, RequestView, Snapshot


def block(i, pool="gpu", ref=0, owners=(), logical=(), hash_=None, filled=0):
    state = "used" if ref else ("cached" if hash_ else "free")
    return BlockView(i, pool, ref, list(owners), list(logical), hash_, filled, state, None if ref else i)


def request(rid, status="running", table=(), pool="gpu", preemptions=0):
    return RequestView(
        rid, status, 20, 3, 22, [5, 6, 7], list(table), pool if table else None, preemptions, 0, 0.0, 0, 0.0, None, "x"
    )


def snapshot(blocks, requests, queues=None, preemptions=(), step=3) -> Snapshot:
    queues = queues or {
        "waiting": [],
        "running": [r.request_id for r in requests if r.status == "running"],
        "swapped": [],
    }
    return Snapshot(step, "cpu", 16, 8192, queues, blocks, requests, list(preemptions), {}, None)
