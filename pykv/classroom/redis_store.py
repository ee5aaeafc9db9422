"""RedisStore: classes in one Redis, shared by any number of app replicas (``PYKV_CLASS_STORE=redis://...``).

Keys (the ``{CODE}`` hash tag keeps one class's keys in one cluster slot)::

    pykv:class:{K7QM2X}:state         hash: the ClassRecord's fields           PEXPIRE ttl, refreshed by replace
    pykv:class:{K7QM2X}:answers:3     hash: learner -> choice (step 3)         expires with :state
    pykv:class:{K7QM2X}:presence      hash: learner -> "mode at"               expires with :state
    pykv:class:{K7QM2X}:keys          set: the class's answers/presence keys   expires with :state
    pykv:classes                      zset: code -> expiry (ms, Redis clock), for the live-class cap
    pykv:class:changes                pub/sub channel: "K7QM2X 5" (new version) or "K7QM2X end"

Every write is one Lua script, so each is atomic like MemoryStore's: add is put-if-absent under the
cap, replace and put_answer compare the record's version, a hash write copies the record's remaining
TTL (it never outlives the class) and is refused for a missing class. ``version()`` is served by the
VersionFeed (version_feed.py) when it can be trusted and by one HGET otherwise. Any Redis failure is
a ClassError naming the server (never its password). TTLs run on Redis's clock; the timestamps
inside records and presence are the replicas' own (``Classes``' clock), so replicas keep their clocks in sync.
"""

from __future__ import annotations

import logging
import math
from typing import Callable, TypeVar

import redis

from pykv.classroom.errors import ClassError, StoreUnavailable
from pykv.classroom.limits import LEARNER_MODES
from pykv.classroom.record_fields import CorruptRecord, from_fields, parse_version, to_fields
from pykv.classroom.store import ClassRecord, Outcome, Seen
from pykv.classroom.version_feed import VersionFeed

log = logging.getLogger(__name__)

T = TypeVar("T")
CHANNEL = "pykv:class:changes"
INDEX = "pykv:classes"

_NOW_MS = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
_ADD = (
    _NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('EXISTS', KEYS[1]) == 1 then return 'taken' end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 'full' end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
return 'ok'"""
)
_REPLACE = (
    _NOW_MS
    + """
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return 'gone' end
if v ~= ARGV[2] then return 'changed' end
if ARGV[4] == '1' then
  for _, k in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    if string.find(k, ':answers:', 1, true) then redis.call('DEL', k) redis.call('SREM', KEYS[2], k) end
  end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
for _, k in ipairs(redis.call('SMEMBERS', KEYS[2])) do redis.call('PEXPIRE', k, ARGV[3]) end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
return 'ok'"""
)
_DELETE = """
local existed = redis.call('EXISTS', KEYS[1])
for _, k in ipairs(redis.call('SMEMBERS', KEYS[2])) do redis.call('DEL', k) end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return existed"""
_PUT = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 'gone' end
if ARGV[4] ~= '' and redis.call('HGET', KEYS[1], 'version') ~= ARGV[4] then return 'changed' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then
  return 'full'
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[3], KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) redis.call('PEXPIRE', KEYS[3], ttl) end
return 'ok'"""


def key(code: str, part: str) -> str:
    return f"pykv:class:{{{code}}}:{part}"


def _ttl_ms(ttl_s: float) -> int:
    return max(1, int(ttl_s * 1000))


def _seen(value: str) -> Seen | None:
    """A presence value ("mode at") read back, or None when it is not one the app writes."""
    mode, _, at = value.partition(" ")
    try:
        when = float(at) if len(at) <= 32 else math.nan
    except ValueError:
        return None
    return Seen(mode, when) if mode in LEARNER_MODES and math.isfinite(when) else None


class RedisStore:
    """Classes in the Redis at ``url`` (redis://[user:password@]host:port/db); see the module docstring."""

    def __init__(self, url: str, trust_s: float = 30.0):
        options = dict(decode_responses=True, socket_connect_timeout=2.0, socket_timeout=5.0)
        try:
            self._redis = redis.Redis.from_url(url, **options)
        except ValueError as e:
            raise ClassError(f"The class store URL is not a Redis URL like redis://host:6379/0 ({e}).") from None
        kw = self._redis.connection_pool.connection_kwargs
        self.where = kw.get("path") or f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"
        self._scripts = {
            name: self._redis.register_script(src)
            for name, src in (("add", _ADD), ("replace", _REPLACE), ("delete", _DELETE), ("put", _PUT))
        }
        self._reader = redis.Redis.from_url(url, **options)  # the feed's re-reads (its thread), apart from ours
        self._feed = VersionFeed(
            lambda: redis.Redis.from_url(url, health_check_interval=5, **options),
            CHANNEL,
            trust_s=trust_s,
            read=self._feed_read,
        )

    # ---- records ---------------------------------------------------------------------------------
    def add_class(self, record: ClassRecord, ttl_s: float, max_classes: int) -> Outcome:
        code = record.state.code
        args = [code, _ttl_ms(ttl_s), max_classes, *to_fields(record)]
        return Outcome(self._call(lambda: self._scripts["add"](keys=[key(code, "state"), INDEX], args=args)))

    def get_class(self, code: str) -> ClassRecord | None:
        h = self._call(lambda: self._redis.hgetall(key(code, "state")))
        if not h:
            return None
        try:
            return from_fields(code, h)
        except CorruptRecord as e:
            self._end_corrupt(code, e)
            return None

    def replace_class(self, record: ClassRecord, expected_version: int, ttl_s: float, clear_answers: bool) -> Outcome:
        code = record.state.code
        keys = [key(code, "state"), key(code, "keys"), INDEX]
        args = [code, str(expected_version), _ttl_ms(ttl_s), "1" if clear_answers else "0", *to_fields(record)]
        return Outcome(self._call(lambda: self._scripts["replace"](keys=keys, args=args)))

    def delete_class(self, code: str) -> bool:
        keys = [key(code, "state"), key(code, "keys"), INDEX]
        return bool(self._call(lambda: self._scripts["delete"](keys=keys, args=[code])))

    def version(self, code: str) -> int | None:
        self._feed.start()
        hit = self._feed.cached(code)
        if hit is not None:
            return hit.version
        mark = self._feed.mark()
        raw = self._call(lambda: self._redis.hget(key(code, "state"), "version"))
        try:
            version = None if raw is None else parse_version(raw)
        except CorruptRecord as e:
            self._end_corrupt(code, e)
            version = None
        self._feed.remember(code, version, mark)
        return version

    def publish(self, code: str, version: int | None) -> None:
        self._feed.note(code, version)
        self._call(lambda: self._redis.publish(CHANNEL, f"{code} {'end' if version is None else version}"))

    # ---- answers and presence --------------------------------------------------------------------
    def put_answer(
        self, code: str, step: int, learner: str, choice: str, at_version: int, max_learners: int
    ) -> Outcome:
        return self._put(code, f"answers:{step}", learner, choice, max_learners, str(at_version))

    def answers(self, code: str, step: int) -> dict[str, str]:
        return self._call(lambda: self._redis.hgetall(key(code, f"answers:{step}")))

    def answer(self, code: str, step: int, learner: str) -> str | None:
        return self._call(lambda: self._redis.hget(key(code, f"answers:{step}"), learner))

    def put_seen(self, code: str, learner: str, seen: Seen, max_learners: int) -> Outcome:
        return self._put(code, "presence", learner, f"{seen.mode} {seen.at!r}", max_learners, "")

    def seen_all(self, code: str) -> dict[str, Seen]:
        raw = self._call(lambda: self._redis.hgetall(key(code, "presence")))
        parsed = {learner: _seen(value) for learner, value in raw.items()}
        return {learner: seen for learner, seen in parsed.items() if seen is not None}  # garbage is skipped

    def drop_seen(self, code: str, learners: list[str]) -> None:
        if learners:
            self._call(lambda: self._redis.hdel(key(code, "presence"), *learners))

    def codes(self) -> list[str]:
        def live() -> list[str]:
            now_s, now_us = self._redis.time()
            return list(self._redis.zrangebyscore(INDEX, now_s * 1000 + now_us // 1000, "+inf"))

        return self._call(live)

    # ---- expiry and lifetime ---------------------------------------------------------------------
    def sweep(self) -> int:
        """Redis expires classes by their keys' TTLs: nothing to do."""
        return 0

    def close(self) -> None:
        self._feed.close()
        self._reader.close()
        self._redis.close()

    def holds(self, code: str) -> bool:
        """Whether any key or index entry is kept for ``code``: tests check an end frees all."""

        def look() -> bool:
            return (
                next(self._redis.scan_iter(match=key(code, "*")), None) is not None
                or self._redis.zscore(INDEX, code) is not None
            )

        return self._call(look)

    def check_invariants(self) -> None:
        self._feed.check_invariants()

    @property
    def feed(self) -> VersionFeed:
        return self._feed

    def _feed_read(self, code: str) -> int | None:
        """The class's real version, for the feed after a change notice (a notice's number is never trusted);
        raises on any failure or garbage (the feed then forgets the code, and the next poll reads it here)."""
        raw = self._reader.hget(key(code, "state"), "version")
        return None if raw is None else parse_version(raw)

    def _end_corrupt(self, code: str, problem: CorruptRecord) -> None:
        """A class whose stored record is garbage (someone wrote into Redis): end it for everyone, logged."""
        log.warning("Class %s ended: its record in Redis at %s is corrupt (%s)", code, self.where, problem)
        keys = [key(code, "state"), key(code, "keys"), INDEX]
        self._call(lambda: self._scripts["delete"](keys=keys, args=[code]))
        self.publish(code, None)

    def _put(self, code: str, part: str, field: str, value: str, max_fields: int, at_version: str) -> Outcome:
        keys = [key(code, "state"), key(code, part), key(code, "keys")]
        args = [field, value, max_fields, at_version]
        return Outcome(self._call(lambda: self._scripts["put"](keys=keys, args=args)))

    def _call(self, op: Callable[[], T]) -> T:
        """Run one Redis operation; a failure becomes a ClassError a user can read."""
        try:
            return op()
        except (redis.ConnectionError, redis.TimeoutError) as e:
            raise StoreUnavailable(f"The class store (Redis at {self.where}) is not reachable: {e}") from None
        except redis.RedisError as e:
            raise StoreUnavailable(f"The class store (Redis at {self.where}) refused the request: {e}") from None
