"""make_store: the class store this deployment uses, from ``PYKV_CLASS_STORE``.

unset, "" or "memory"          MemoryStore: classes live in this process (one server)
redis://host:6379/0            RedisStore: classes live in that Redis, shared by every replica
(also rediss:// and unix://)
"""

from __future__ import annotations

import os

from pykv.classroom.errors import ClassError
from pykv.classroom.memory_store import MemoryStore
from pykv.classroom.store import ClassStore

ENV = "PYKV_CLASS_STORE"
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def make_store(url: str | None = None) -> ClassStore:
    """The store named by ``url``, or by the environment variable PYKV_CLASS_STORE when ``url`` is None."""
    where = os.environ.get(ENV, "") if url is None else url
    where = where.strip()
    if where in ("", "memory"):
        return MemoryStore()
    if where.lower().startswith(_REDIS_SCHEMES):
        from pykv.classroom.redis_store import RedisStore  # needs the redis package only when asked for

        return RedisStore(where)
    raise ClassError(
        f"{ENV} must be 'memory' or a Redis URL like redis://host:6379/0 (got a value starting {where[:8]!r})."
    )
