"""Checking a value path when a lesson loads, before anything runs: its root, the names it uses
(requests, runs, tokenizations defined so far: Known) and every field down the typed data it walks.
``CHECKERS`` holds one checker per root of ``pykv.lessons.values.paths.ROOTS``. Checking imports nothing of
the engine: the types read here are the border types, RunSummary and TokenDiff.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from pykv.border.config import EngineConfig
from pykv.border.snapshot import BlockView, RequestView
from pykv.border.step_report import PreemptionView, StepReport
from pykv.gpu_model.schedule import ModelledView
from pykv.lessons.format.errors import FieldError
from pykv.lessons.values.run_summary import RunSummary
from pykv.lessons.values.sizing import ENGINE_MODEL, UTILIZATION_KEYS, CatalogueKv, EngineKv, known_models, model_name
from pykv.lessons.values.tokens import TokenDiff

ENGINE_FIELDS = ("step", "done", "config")
QUEUES = ("waiting", "running", "swapped")
POOLS = ("gpu", "cpu")
POOL_FIELDS = ("free", "cached", "used", "total", "usable", "slots", "filled_slots", "wasted_slots")  # blocks; slots
REQUEST_EXTRA = {"num_blocks": int}  # read off the snapshot, not a RequestView field


@lru_cache(maxsize=1)
def metric_names() -> tuple[str, ...]:
    from pykv.engine.observe.metrics import all_metric_names

    return all_metric_names()


@dataclass(frozen=True)
class Known:
    """What a path may name at one point of a lesson (for load-time checks)."""

    requests: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    tokens: frozenset[str] = frozenset()


def choices(items) -> str:
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
        elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
            names = _fields(tp)
            if seg not in names:
                raise FieldError("", f"{done}: field {seg!r} is unknown; use one of {choices(names)}")
            tp = names[seg]
        else:
            raise FieldError("", f"{done} is a single value; it has no {seg!r}")
        done = f"{done}.{seg}"


def _need(parts: list[str], n: int, path: str, what: str) -> None:
    if len(parts) < n:
        raise FieldError("", f"path {path!r} is incomplete: {what}")


def _one_of(value: str, allowed, what: str, path: str) -> None:
    if value not in allowed:
        raise FieldError("", f"path {path!r}: {what} {value!r} is unknown; use one of {choices(allowed)}")


def _known_request(rid: str, path: str, known: Known) -> None:
    if rid not in known.requests:
        raise FieldError(
            "",
            f"path {path!r} names request {rid!r}, which neither the workload nor an earlier "
            f"add_request defines (requests so far: {choices(sorted(known.requests))})",
        )


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


def _check_kv(rest: list[str], path: str, known: Known) -> None:
    _need(
        rest,
        2,
        path,
        "write kv.model.FIELD or kv.NAME.FIELD with NAME a catalogue model, e.g. kv.llama-3.1-8b.bytes_per_token",
    )
    name, fields = model_name(rest)
    if not name:
        raise FieldError(
            "", f"path {path!r}: model {'.'.join(rest[:-1])!r} is unknown; use one of {choices(known_models())}"
        )
    _need(fields, 1, path, f"write kv.{name}.FIELD")
    check_type(fields, EngineKv if name == ENGINE_MODEL else CatalogueKv, f"kv.{name}")
    if fields[0] == "at_utilization" and len(fields) > 1 and fields[1] not in UTILIZATION_KEYS:
        _one_of(fields[1], UTILIZATION_KEYS, "gpu_memory_utilization (percent)", path)


def _saved_checker(root: str, names_of: Callable[[Known], frozenset[str]], tp: type, action: str):
    def check(rest: list[str], path: str, known: Known) -> None:
        _need(rest, 2, path, f"write {root}.NAME.FIELD")
        if rest[0] not in names_of(known):
            raise FieldError(
                "",
                f"path {path!r} names {root} {rest[0]!r}, which no earlier {action!r} action "
                f"saves (saved so far: {choices(sorted(names_of(known)))})",
            )
        _one_of(rest[1], tuple(_fields(tp)), f"{root} field", path)
        check_type(rest[2:], _fields(tp)[rest[1]], f"{root}.{rest[0]}.{rest[1]}")

    return check


Checker = Callable[[list[str], str, Known], None]  # (segments after the root, path, known)
CHECKERS: dict[str, Checker] = {
    "engine": _check_engine,
    "queue": _check_queue,
    "request": _check_request,
    "block": _check_block,
    "pool": _check_pool,
    "metric": _check_metric,
    "last_step": _check_last_step,
    "preemptions": _check_preemptions,
    "run": _saved_checker("run", lambda k: k.runs, RunSummary, "run"),
    "modelled": _check_modelled,
    "kv": _check_kv,
    "tokens": _saved_checker("tokens", lambda k: k.tokens, TokenDiff, "tokenize"),
}
