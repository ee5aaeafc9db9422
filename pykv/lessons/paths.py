"""Value paths: the dotted names a lesson reads the engine's state with (``request.a.status``).

A path is a root, the root's own segments, then generic segments walked into the value::

    request . a . block_table . last          root "request": id, field; then list index
    block . a . 0 . ref_cnt                   root "block": request id, logical index, field
    metric . vllm:num_preemptions_total       root "metric": the rest is one name
    run . short . preemption_records . 0 . mode

Generic segments: a mapping key, a field name, a list index (``0``, ``last``) or ``length``.
``check_path`` validates a path when the lesson loads (roots, names, fields it can know then);
``resolve`` reads it in a Scope (the state after a step's actions) and raises PathError.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

from pykv.config import EngineConfig
from pykv.lessons.errors import FieldError, PathError
from pykv.lessons.runs import RunSummary
from pykv.lessons.tokens import TokenDiff
from pykv.snapshot import BlockView, RequestView, Snapshot, StepReport

NOT_ARRIVED = "not_arrived"  # status of a request the lesson defines but the engine has not been given yet

ROOTS = ("engine", "queue", "request", "block", "pool", "metric", "last_step", "preemptions", "run", "tokens")
ENGINE_FIELDS = ("step", "done", "config")
QUEUES = ("waiting", "running", "swapped")
REQUEST_FIELDS = tuple(f.name for f in dataclasses.fields(RequestView)) + ("output_token_ids", "num_blocks")
BLOCK_FIELDS = tuple(f.name for f in dataclasses.fields(BlockView))
POOLS = ("gpu", "cpu")
POOL_FIELDS = ("free", "cached", "used", "total")
LAST_STEP_FIELDS = tuple(f.name for f in dataclasses.fields(StepReport))
CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(EngineConfig))
RUN_FIELDS = tuple(f.name for f in dataclasses.fields(RunSummary))
TOKEN_FIELDS = tuple(f.name for f in dataclasses.fields(TokenDiff))


@lru_cache(maxsize=1)
def metric_names() -> tuple[str, ...]:
    from pykv.metrics import EngineMetrics

    return tuple(EngineMetrics().as_dict())


@dataclass(frozen=True)
class Known:
    """What a path may name at one point of a lesson (for load-time checks)."""

    requests: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    tokens: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Scope:
    """The state a path is read in: the Lab's snapshot on screen plus what the snapshot lacks."""

    view: Snapshot
    config: EngineConfig
    done: bool  # no request left to run and none still to arrive
    outputs: Mapping[str, list[int]]  # request id -> output token ids so far (live and finished)
    runs: Mapping[str, RunSummary] = field(default_factory=dict)
    tokens: Mapping[str, TokenDiff] = field(default_factory=dict)
    arrivals: Mapping[str, int] = field(default_factory=dict)  # request id -> engine step it is added at


def _choices(items) -> str:
    return ", ".join(items) if items else "(none yet)"


def _need(parts: list[str], n: int, path: str, what: str) -> None:
    if len(parts) < n:
        raise FieldError("", f"path {path!r} is incomplete: {what}")


def check_path(path: str, known: Known) -> None:
    """Raise FieldError (field left empty: the caller knows it) if ``path`` cannot be valid here."""
    if not isinstance(path, str) or not path.strip():
        raise FieldError("", f"a value path is text such as request.a.status, got {path!r}")
    parts = path.strip().split(".")
    root = parts[0]
    if root not in ROOTS:
        raise FieldError("", f"path {path!r} starts with unknown root {root!r}; use one of {', '.join(ROOTS)}")

    def one_of(value: str, allowed, what: str) -> None:
        if value not in allowed:
            raise FieldError("", f"path {path!r}: {what} {value!r} is unknown; use one of {_choices(allowed)}")

    if root == "engine":
        _need(parts, 2, path, f"write engine.{{{'|'.join(ENGINE_FIELDS)}}}")
        one_of(parts[1], ENGINE_FIELDS, "engine field")
        if parts[1] == "config":
            _need(parts, 3, path, "write engine.config.FIELD")
            one_of(parts[2], CONFIG_FIELDS, "config field")
    elif root == "queue":
        _need(parts, 2, path, "write queue.waiting, queue.running or queue.swapped")
        one_of(parts[1], QUEUES, "queue")
    elif root in ("request", "block"):
        _need(parts, 3 if root == "request" else 4, path,
              "write request.ID.FIELD" if root == "request" else "write block.ID.INDEX.FIELD")
        if parts[1] not in known.requests:
            raise FieldError("", f"path {path!r} names request {parts[1]!r}, which neither the workload nor an "
                                 f"earlier add_request defines (requests so far: {_choices(sorted(known.requests))})")
        if root == "request":
            one_of(parts[2], REQUEST_FIELDS, "request field")
        else:
            if parts[2] != "last" and not parts[2].lstrip("-").isdigit():
                raise FieldError("", f"path {path!r}: the block index must be a number or 'last', got {parts[2]!r}")
            one_of(parts[3], BLOCK_FIELDS, "block field")
    elif root == "pool":
        _need(parts, 3, path, "write pool.gpu.FIELD or pool.cpu.FIELD")
        one_of(parts[1], POOLS, "pool")
        one_of(parts[2], POOL_FIELDS, "pool field")
    elif root == "metric":
        _need(parts, 2, path, "write metric.NAME, e.g. metric.vllm:num_preemptions_total")
        one_of(".".join(parts[1:]), metric_names(), "metric")
    elif root == "last_step":
        _need(parts, 2, path, "write last_step.FIELD")
        one_of(parts[1], LAST_STEP_FIELDS, "last_step field")
    elif root in ("run", "tokens"):
        names, fields = (known.runs, RUN_FIELDS) if root == "run" else (known.tokens, TOKEN_FIELDS)
        _need(parts, 3, path, f"write {root}.NAME.FIELD")
        if parts[1] not in names:
            action = "run" if root == "run" else "tokenize"
            raise FieldError("", f"path {path!r} names {root} {parts[1]!r}, which no earlier {action!r} action "
                                 f"saves (saved so far: {_choices(sorted(names))})")
        one_of(parts[2], fields, f"{root} field")


# ---- reading a path ---------------------------------------------------------------------------


def _walk(value: Any, segments: list[str], done: str) -> Any:
    """Follow generic segments (key, field, index, ``last``, ``length``) from ``value``."""
    for seg in segments:
        where = f"{done}.{seg}"
        if seg == "length" and isinstance(value, (list, tuple, dict, str)):
            value = len(value)
        elif isinstance(value, (list, tuple)):
            if seg == "last":
                seg = "-1"
            try:
                value = value[int(seg)]
            except ValueError:
                raise PathError(f"{done} is a list: index it with a number, 'last' or 'length', not {seg!r}") from None
            except IndexError:
                raise PathError(f"{where}: {done} has only {len(value)} items") from None
        elif isinstance(value, Mapping):
            if seg not in value:
                raise PathError(f"{where}: no key {seg!r} (keys: {_choices([str(k) for k in value][:12])})")
            value = value[seg]
        elif dataclasses.is_dataclass(value) and hasattr(value, seg):
            value = getattr(value, seg)
        else:
            raise PathError(f"{where}: {done} is {value!r}, which has no {seg!r}")
        done = where
    return value


def _request(scope: Scope, request_id: str, path: str) -> RequestView | None:
    view = next((r for r in scope.view.requests if r.request_id == request_id), None)
    if view is None and request_id not in scope.arrivals:
        raise PathError(f"{path}: there is no request {request_id!r} (requests now: "
                        f"{_choices([r.request_id for r in scope.view.requests])})")
    return view


def resolve(path: str, scope: Scope) -> Any:
    """The value ``path`` names in ``scope``; PathError says what is missing."""
    parts = path.strip().split(".")
    root, rest = parts[0], parts[1:]
    view = scope.view
    if root == "engine":
        if rest[:1] == ["config"] and len(rest) >= 2:
            return _walk(getattr(scope.config, rest[1]), rest[2:], f"engine.config.{rest[1]}")
        base = {"step": view.step, "done": scope.done}
        return _walk(base, rest, "engine")
    if root == "queue":
        return _walk(view.queues, rest, "queue")
    if root == "request":
        request = _request(scope, rest[0], path)
        if request is None:
            if rest[1:] == ["status"]:
                return NOT_ARRIVED
            raise PathError(f"{path}: request {rest[0]!r} has not arrived yet (it is added at engine step "
                            f"{scope.arrivals[rest[0]]}; the engine is at step {view.step})")
        extra = {"output_token_ids": scope.outputs.get(rest[0], []), "num_blocks": len(request.block_table)}
        value = extra[rest[1]] if rest[1] in extra else getattr(request, rest[1])
        return _walk(value, rest[2:], f"request.{rest[0]}.{rest[1]}")
    if root == "block":
        request = _request(scope, rest[0], path)
        if request is None or not request.block_table:
            raise PathError(f"{path}: request {rest[0]!r} holds no blocks now")
        table = _walk(request.block_table, [rest[1]], f"request.{rest[0]}.block_table")
        block = view.block(request.pool, table)
        return _walk(block, rest[2:], f"block.{rest[0]}.{rest[1]}")
    if root == "pool":
        states = [b.state for b in view.blocks if b.pool == rest[0]]
        counts = {"free": states.count("free"), "cached": states.count("cached"), "used": states.count("used"),
                  "total": len(states)}
        return _walk(counts, rest[1:], f"pool.{rest[0]}")
    if root == "metric":
        name = ".".join(rest)
        if name not in view.metrics:
            raise PathError(f"{path}: no metric {name!r} (metrics: {_choices(sorted(view.metrics))})")
        return view.metrics[name]
    if root == "last_step":
        if view.report is None:
            raise PathError(f"{path}: no engine step has run yet (the engine is at step {view.step})")
        report = dict(view.report)
        report["finished"] = [o["request_id"] for o in report["finished"]]  # ids, so `contains: a` works
        return _walk(report, rest, "last_step")
    if root == "preemptions":
        return _walk(view.preemptions, rest, "preemptions")
    if root in ("run", "tokens"):
        saved = scope.runs if root == "run" else scope.tokens
        if rest[0] not in saved:
            raise PathError(f"{path}: nothing saved as {root}.{rest[0]} yet (saved: {_choices(sorted(saved))})")
        return _walk(saved[rest[0]], rest[1:], f"{root}.{rest[0]}")
    raise PathError(f"{path}: unknown root {root!r}; use one of {', '.join(ROOTS)}")
