"""Value paths: the dotted names a lesson reads the engine's state with (``request.a.status``).

A path is a root, the root's own segments, then generic segments walked into the value::

    request . a . block_table . last          root "request": id, field; then list index
    block . a . 0 . ref_cnt                   root "block": request id, logical index, field
    metric . vllm:num_preemptions_total       root "metric": the rest is one name
    run . short . preemption_records . 0 . mode
    modelled . preemptions . 0 . delay_to_others_ms   the run so far priced on LESSON_TARGET
    kv . llama-3.1-8b . bytes_per_token       root "kv": model (the engine's) or a catalogue name; see sizing.py

Generic segments: a mapping key, a field name, a list index (``0``, ``last``) or ``length``.
Each root is one row of ``ROOTS``: how to check a path when the lesson loads (its checker, in
path_checks.py: roots, names, and every field down the typed data it names) and how to read it in a
Scope (its reader, here: the value in the state after a step's actions).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from pykv.border.config import EngineConfig
from pykv.border.snapshot import RequestView, Snapshot
from pykv.gpu_model import DEFAULT_TARGET
from pykv.gpu_model.schedule import modelled_view
from pykv.lessons.format.errors import FieldError, PathError
from pykv.lessons.values.path_checks import CHECKERS, Checker, Known, choices
from pykv.lessons.values.run_summary import RunSummary
from pykv.lessons.values.sizing import ENGINE_MODEL, catalogue_kv, engine_kv, model_name
from pykv.lessons.values.tokens import TokenDiff

NOT_ARRIVED = "not_arrived"  # status of a request the lesson defines but the engine has not been given yet
LESSON_TARGET = DEFAULT_TARGET  # what `modelled.*` and `run.NAME.modelled_*` price on: H100-SXM + Llama-3.1-8B, bf16


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


class Root(NamedTuple):
    check: Checker  # (segments after the root, path, known): pykv.lessons.values.path_checks
    read: Callable[[list[str], str, Scope], Any]


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
                raise PathError(f"{where}: no key {seg!r} (keys: {choices([str(k) for k in value][:12])})")
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
        raise PathError(
            f"{path}: there is no request {request_id!r} (requests now: "
            f"{choices([r.request_id for r in scope.view.requests])})"
        )
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
        raise PathError(
            f"{path}: request {rest[0]!r} has not arrived yet (it is added at engine step "
            f"{scope.arrivals[rest[0]]}; the engine is at step {scope.view.step})"
        )
    value = len(request.block_table) if rest[1] == "num_blocks" else getattr(request, rest[1])
    return _walk(value, rest[2:], f"request.{rest[0]}.{rest[1]}")


def _read_block(rest: list[str], path: str, scope: Scope) -> Any:
    request = _request(scope, rest[0], path)
    if request is None or not request.block_table or request.pool is None:
        raise PathError(f"{path}: request {rest[0]!r} holds no blocks now")
    block_id = _walk(request.block_table, [rest[1]], f"request.{rest[0]}.block_table")
    return _walk(scope.view.block(request.pool, block_id), rest[2:], f"block.{rest[0]}.{rest[1]}")


def _read_pool(rest: list[str], path: str, scope: Scope) -> Any:
    blocks = [b for b in scope.view.blocks if b.pool == rest[0]]
    states = [b.state for b in blocks]
    filled = sum(b.tokens_filled for b in blocks if b.state == "used")
    size = scope.view.block_size
    counts = {
        "free": states.count("free"),
        "cached": states.count("cached"),
        "used": states.count("used"),
        "total": len(states),
        "usable": len(states) - states.count("null"),  # V1 keeps its null block back
        "slots": len(states) * size,
        "filled_slots": filled,
        # internal fragmentation: slots of blocks in use that hold no KV (each request's last block)
        "wasted_slots": states.count("used") * size - filled,
    }
    return _walk(counts, rest[1:], f"pool.{rest[0]}")


def _read_metric(rest: list[str], path: str, scope: Scope) -> Any:
    name = ".".join(rest)
    if name not in scope.view.metrics:
        raise PathError(f"{path}: no metric {name!r} (metrics: {choices(sorted(scope.view.metrics))})")
    return scope.view.metrics[name]


def _read_last_step(rest: list[str], path: str, scope: Scope) -> Any:
    report = scope.view.report
    if report is None:
        raise PathError(f"{path}: no engine step has run yet (the engine is at step {scope.view.step})")
    if rest[0] == "finished":
        return _walk([o.request_id for o in report.finished], rest[1:], "last_step.finished")
    return _walk(report, rest, "last_step")


def _read_modelled(rest: list[str], path: str, scope: Scope) -> Any:
    history = list(scope.history) or [scope.view]
    return _walk(modelled_view(LESSON_TARGET.estimate(), history), rest, "modelled")


def _read_kv(rest: list[str], path: str, scope: Scope) -> Any:
    name, fields = model_name(rest)
    if name == ENGINE_MODEL:
        return _walk(engine_kv(scope.config, scope.view), fields, "kv.model")
    return _walk(catalogue_kv(name, scope.config.block_size), fields, f"kv.{name}")


def _saved_reader(root: str, saved_of: Callable[[Scope], Mapping[str, Any]]):
    def read(rest: list[str], path: str, scope: Scope) -> Any:
        saved = saved_of(scope)
        if rest[0] not in saved:
            raise PathError(f"{path}: nothing saved as {root}.{rest[0]} yet (saved: {choices(sorted(saved))})")
        return _walk(saved[rest[0]], rest[1:], f"{root}.{rest[0]}")

    return read


ROOTS: dict[str, Root] = {
    "engine": Root(CHECKERS["engine"], _read_engine),
    "queue": Root(CHECKERS["queue"], lambda rest, path, scope: _walk(scope.view.queues, rest, "queue")),
    "request": Root(CHECKERS["request"], _read_request),
    "block": Root(CHECKERS["block"], _read_block),
    "pool": Root(CHECKERS["pool"], _read_pool),
    "metric": Root(CHECKERS["metric"], _read_metric),
    "last_step": Root(CHECKERS["last_step"], _read_last_step),
    "preemptions": Root(
        CHECKERS["preemptions"], lambda rest, path, scope: _walk(scope.view.preemptions, rest, "preemptions")
    ),
    "run": Root(CHECKERS["run"], _saved_reader("run", lambda s: s.runs)),
    "modelled": Root(CHECKERS["modelled"], _read_modelled),
    "kv": Root(CHECKERS["kv"], _read_kv),
    "tokens": Root(CHECKERS["tokens"], _saved_reader("tokens", lambda s: s.tokens)),
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
