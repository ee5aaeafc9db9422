"""Value paths: the dotted names a lesson reads the engine's state with (``request.a.status``).

A path is a root, the root's own segments, then generic segments walked into the value::

    request . a . block_table . last          root "request": id, field; then list index
    block . a . 0 . ref_cnt                   root "block": request id, logical index, field
    metric . vllm:num_preemptions_total       root "metric": the rest is one name
    run . short . preemption_records . 0 . mode
    modelled . preemptions . 0 . delay_to_others_ms   the run so far priced on LESSON_TARGET
    kv . llama-3.1-8b . bytes_per_token       root "kv": model (the engine's) or a catalogue name; see sizing.py

Generic segments: a mapping key, a field name, a list index (``0``, ``last``) or ``length``.
Each root is one row of ``ROOTS``: how to check a path when the lesson loads (roots, names, and every
field down the typed data it names) and how to read it in a Scope (the state after a step's actions).
Checking imports nothing of the engine: the types read here are the border types and RunSummary.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

from pykv.config import EngineConfig
from pykv.gpu_model import DEFAULT_TARGET
from pykv.gpu_model.schedule import ModelledView, modelled_view
from pykv.lessons.errors import FieldError, PathError
from pykv.lessons.run_summary import RunSummary
from pykv.lessons.sizing import (
    ENGINE_MODEL,
    UTILIZATION_KEYS,
    CatalogueKv,
    EngineKv,
    catalogue_kv,
    engine_kv,
    known_models,
    model_name,
)
from pykv.lessons.tokens import TokenDiff
from pykv.snapshot import BlockView, RequestView, Snapshot
from pykv.step_report import PreemptionView, StepReport

NOT_ARRIVED = "not_arrived"  # status of a request the lesson defines but the engine has not been given yet
ENGINE_FIELDS = ("step", "done", "config")
QUEUES = ("waiting", "running", "swapped")
POOLS = ("gpu", "cpu")
POOL_FIELDS = ("free", "cached", "used", "total", "slots", "filled_slots", "wasted_slots")  # blocks; token slots
REQUEST_EXTRA = {"num_blocks": int}  # read off the snapshot, not a RequestView field
LESSON_TARGET = DEFAULT_TARGET  # what `modelled.*` and `run.NAME.modelled_*` price on: H100-SXM + Llama-3.1-8B, bf16


@lru_cache(maxsize=1)
def metric_names() -> tuple[str, ...]:
    from pykv.metrics import all_metric_names

    return all_metric_names()


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
    runs: Mapping[str, RunSummary] = field(default_factory=dict)
    tokens: Mapping[str, TokenDiff] = field(default_factory=dict)
    arrivals: Mapping[str, int] = field(default_factory=dict)  # request id -> engine step it is added at
    history: Sequence[Snapshot] = ()  # the snapshots from step 0 to ``view``: what `modelled.*` prices


def _choices(items) -> str:
    return ", ".join(items) if items else "(none yet)"


# ---- checking a path against the types it walks ---------------------------------------------------


@lru_cache(maxsize=None)
def _fields(tp: type) -> dict[str, Any]:
    """The type hints of a border type (cached: read per path segment, and a lesson may hold thousands)."""
    return typing.get_type_hints(tp)


def _is_index(seg: str) -> bool:
    return seg == "last" or seg.lstrip("-").isdigit()


def check_type(segments: list[str], tp: Any, done: str) -> None:
    """FieldError if the generic ``segments`` cannot be walked from a value of type ``tp``."""
    for seg in segments:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Union:
            tp = next(a for a in args if a is not type(None))
            origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp in (Any, dict, list):
            return  # untyped inside: read-time errors say what is missing
        if seg == "length" and (origin in (list, dict) or tp is str):
            tp = int
        elif origin is list:
            if not _is_index(seg):
                raise FieldError("", f"{done} is a list: index it with a number, 'last' or 'length', not {seg!r}")
            tp = args[0]
        elif origin is dict:
            tp = args[1]
        elif dataclasses.is_dataclass(tp):
            names = _fields(tp)
            if seg not in names:
                raise FieldError("", f"{done}: field {seg!r} is unknown; use one of {_choices(names)}")
            tp = names[seg]
        else:
            raise FieldError("", f"{done} is a single value; it has no {seg!r}")
        done = f"{done}.{seg}"


class Root(NamedTuple):
    check: Callable[[list[str], str, Known], None]  # (segments after the root, path, known)
    read: Callable[[list[str], str, Scope], Any]


def _need(parts: list[str], n: int, path: str, what: str) -> None:
    if len(parts) < n:
        raise FieldError("", f"path {path!r} is incomplete: {what}")


def _one_of(value: str, allowed, what: str, path: str) -> None:
    if value not in allowed:
        raise FieldError("", f"path {path!r}: {what} {value!r} is unknown; use one of {_choices(allowed)}")


def _known_request(rid: str, path: str, known: Known) -> None:
    if rid not in known.requests:
        raise FieldError("", f"path {path!r} names request {rid!r}, which neither the workload nor an earlier "
                             f"add_request defines (requests so far: {_choices(sorted(known.requests))})")


def _check_engine(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 1, path, f"write engine.{{{'|'.join(ENGINE_FIELDS)}}}")
    _one_of(rest[0], ENGINE_FIELDS, "engine field", path)
    if rest[0] == "config":
        _need(rest, 2, path, "write engine.config.FIELD")
        _one_of(rest[1], tuple(EngineConfig.model_fields), "config field", path)


def _check_queue(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 1, path, "write queue.waiting, queue.running or queue.swapped")
    _one_of(rest[0], QUEUES, "queue", path)
    check_type(rest[1:], list[str], f"queue.{rest[0]}")


def _check_request(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 2, path, "write request.ID.FIELD")
    _known_request(rest[0], path, known)
    fields = _fields(RequestView) | REQUEST_EXTRA
    _one_of(rest[1], tuple(fields), "request field", path)
    check_type(rest[2:], fields[rest[1]], f"request.{rest[0]}.{rest[1]}")


def _check_block(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 3, path, "write block.ID.INDEX.FIELD")
    _known_request(rest[0], path, known)
    if not _is_index(rest[1]):
        raise FieldError("", f"path {path!r}: the block index must be a number or 'last', got {rest[1]!r}")
    _one_of(rest[2], tuple(_fields(BlockView)), "block field", path)
    check_type(rest[3:], _fields(BlockView)[rest[2]], f"block.{rest[0]}.{rest[1]}.{rest[2]}")


def _check_pool(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 2, path, "write pool.gpu.FIELD or pool.cpu.FIELD")
    _one_of(rest[0], POOLS, "pool", path)
    _one_of(rest[1], POOL_FIELDS, "pool field", path)


def _check_metric(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 1, path, "write metric.NAME, e.g. metric.vllm:num_preemptions_total")
    _one_of(".".join(rest), metric_names(), "metric", path)


def _check_last_step(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 1, path, "write last_step.FIELD")
    fields = _fields(StepReport) | {"finished": list[str]}  # finished reads as ids, so `contains: a` works
    _one_of(rest[0], tuple(fields), "last_step field", path)
    check_type(rest[1:], fields[rest[0]], f"last_step.{rest[0]}")


def _check_preemptions(rest: list[str], path: str, known: Known) -> None:
    check_type(rest, list[PreemptionView], "preemptions")


def _check_modelled(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 1, path, "write modelled.FIELD, e.g. modelled.clock_ms or modelled.preemptions.0.modelled_ms")
    _one_of(rest[0], tuple(_fields(ModelledView)), "modelled field", path)
    check_type(rest[1:], _fields(ModelledView)[rest[0]], f"modelled.{rest[0]}")


def _read_modelled(rest: list[str], path: str, scope: Scope) -> Any:
    history = list(scope.history) or [scope.view]
    return _walk(modelled_view(LESSON_TARGET.estimate(), history), rest, "modelled")


def _check_kv(rest: list[str], path: str, known: Known) -> None:
    _need(rest, 2, path, "write kv.model.FIELD or kv.NAME.FIELD with NAME a catalogue model, e.g. "
                         "kv.llama-3.1-8b.bytes_per_token")
    name, fields = model_name(rest)
    if not name:
        raise FieldError("", f"path {path!r}: model {'.'.join(rest[:-1])!r} is unknown; use one of "
                             f"{_choices(known_models())}")
    _need(fields, 1, path, f"write kv.{name}.FIELD")
    check_type(fields, EngineKv if name == ENGINE_MODEL else CatalogueKv, f"kv.{name}")
    if fields[0] == "at_utilization" and len(fields) > 1 and fields[1] not in UTILIZATION_KEYS:
        _one_of(fields[1], UTILIZATION_KEYS, "gpu_memory_utilization (percent)", path)


def _read_kv(rest: list[str], path: str, scope: Scope) -> Any:
    name, fields = model_name(rest)
    if name == ENGINE_MODEL:
        return _walk(engine_kv(scope.config, scope.view), fields, "kv.model")
    return _walk(catalogue_kv(name, scope.config.block_size), fields, f"kv.{name}")


def _saved_checker(root: str, names_of: Callable[[Known], frozenset[str]], tp: type, action: str):
    def check(rest: list[str], path: str, known: Known) -> None:
        _need(rest, 2, path, f"write {root}.NAME.FIELD")
        if rest[0] not in names_of(known):
            raise FieldError("", f"path {path!r} names {root} {rest[0]!r}, which no earlier {action!r} action "
                                 f"saves (saved so far: {_choices(sorted(names_of(known)))})")
        _one_of(rest[1], tuple(_fields(tp)), f"{root} field", path)
        check_type(rest[2:], _fields(tp)[rest[1]], f"{root}.{rest[0]}.{rest[1]}")

    return check


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


def _request(scope: Scope, request_id: str, path: str) -> Optional[RequestView]:
    view = next((r for r in scope.view.requests if r.request_id == request_id), None)
    if view is None and request_id not in scope.arrivals:
        raise PathError(f"{path}: there is no request {request_id!r} (requests now: "
                        f"{_choices([r.request_id for r in scope.view.requests])})")
    return view


def _read_engine(rest: list[str], path: str, scope: Scope) -> Any:
    if rest[:1] == ["config"] and len(rest) >= 2:
        return _walk(getattr(scope.config, rest[1]), rest[2:], f"engine.config.{rest[1]}")
    return _walk({"step": scope.view.step, "done": scope.done}, rest, "engine")


def _read_request(rest: list[str], path: str, scope: Scope) -> Any:
    request = _request(scope, rest[0], path)
    if request is None:
        if rest[1:] == ["status"]:
            return NOT_ARRIVED
        raise PathError(f"{path}: request {rest[0]!r} has not arrived yet (it is added at engine step "
                        f"{scope.arrivals[rest[0]]}; the engine is at step {scope.view.step})")
    value = len(request.block_table) if rest[1] == "num_blocks" else getattr(request, rest[1])
    return _walk(value, rest[2:], f"request.{rest[0]}.{rest[1]}")


def _read_block(rest: list[str], path: str, scope: Scope) -> Any:
    request = _request(scope, rest[0], path)
    if request is None or not request.block_table:
        raise PathError(f"{path}: request {rest[0]!r} holds no blocks now")
    block_id = _walk(request.block_table, [rest[1]], f"request.{rest[0]}.block_table")
    return _walk(scope.view.block(request.pool, block_id), rest[2:], f"block.{rest[0]}.{rest[1]}")


def _read_pool(rest: list[str], path: str, scope: Scope) -> Any:
    blocks = [b for b in scope.view.blocks if b.pool == rest[0]]
    states = [b.state for b in blocks]
    filled = sum(b.tokens_filled for b in blocks if b.state == "used")
    size = scope.view.block_size
    counts = {"free": states.count("free"), "cached": states.count("cached"), "used": states.count("used"),
              "total": len(states), "slots": len(states) * size, "filled_slots": filled,
              # internal fragmentation: slots of blocks in use that hold no KV (each request's last block)
              "wasted_slots": states.count("used") * size - filled}
    return _walk(counts, rest[1:], f"pool.{rest[0]}")


def _read_metric(rest: list[str], path: str, scope: Scope) -> Any:
    name = ".".join(rest)
    if name not in scope.view.metrics:
        raise PathError(f"{path}: no metric {name!r} (metrics: {_choices(sorted(scope.view.metrics))})")
    return scope.view.metrics[name]


def _read_last_step(rest: list[str], path: str, scope: Scope) -> Any:
    report = scope.view.report
    if report is None:
        raise PathError(f"{path}: no engine step has run yet (the engine is at step {scope.view.step})")
    if rest[0] == "finished":
        return _walk([o.request_id for o in report.finished], rest[1:], "last_step.finished")
    return _walk(report, rest, "last_step")


def _saved_reader(root: str, saved_of: Callable[[Scope], Mapping[str, Any]]):
    def read(rest: list[str], path: str, scope: Scope) -> Any:
        saved = saved_of(scope)
        if rest[0] not in saved:
            raise PathError(f"{path}: nothing saved as {root}.{rest[0]} yet (saved: {_choices(sorted(saved))})")
        return _walk(saved[rest[0]], rest[1:], f"{root}.{rest[0]}")

    return read


ROOTS: dict[str, Root] = {
    "engine": Root(_check_engine, _read_engine),
    "queue": Root(_check_queue, lambda rest, path, scope: _walk(scope.view.queues, rest, "queue")),
    "request": Root(_check_request, _read_request),
    "block": Root(_check_block, _read_block),
    "pool": Root(_check_pool, _read_pool),
    "metric": Root(_check_metric, _read_metric),
    "last_step": Root(_check_last_step, _read_last_step),
    "preemptions": Root(_check_preemptions,
                        lambda rest, path, scope: _walk(scope.view.preemptions, rest, "preemptions")),
    "run": Root(_saved_checker("run", lambda k: k.runs, RunSummary, "run"), _saved_reader("run", lambda s: s.runs)),
    "modelled": Root(_check_modelled, _read_modelled),
    "kv": Root(_check_kv, _read_kv),
    "tokens": Root(_saved_checker("tokens", lambda k: k.tokens, TokenDiff, "tokenize"),
                   _saved_reader("tokens", lambda s: s.tokens)),
}


def _split(path: Any) -> tuple[str, list[str]]:
    if not isinstance(path, str) or not path.strip():
        raise FieldError("", f"a value path is text such as request.a.status, got {path!r}")
    root, *rest = path.strip().split(".")
    if root not in ROOTS:
        raise FieldError("", f"path {path!r} starts with unknown root {root!r}; use one of {', '.join(ROOTS)}")
    return root, rest


def check_path(path: str, known: Known) -> None:
    """Raise FieldError (field left empty: the caller knows it) if ``path`` cannot be valid here."""
    root, rest = _split(path)
    ROOTS[root].check(rest, path, known)


def resolve(path: str, scope: Scope) -> Any:
    """The value ``path`` names in ``scope``; PathError says what is missing."""
    try:
        root, rest = _split(path)
    except FieldError as e:
        raise PathError(e.problem) from None
    return ROOTS[root].read(rest, path, scope)
