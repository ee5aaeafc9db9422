"""The oracle's two border formats, written by pykv's side and by each vLLM driver: a *case* (an engine
config and a workload given as token ids, with the tokens pykv produced so vLLM's side can feed the same ones)
and a *trace* (what one side's scheduler did, step by step).

Plain dataclasses and JSON: this module imports neither pykv nor vLLM, so the vLLM drivers (run by each
release's own venv) and pykv's side both load it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1


@dataclass
class CaseConfig:
    """The scheduler knobs both sides are given (named as pykv's EngineConfig and vLLM's flags name them)."""

    profile: str  # "v0.6" | "v0.10" | "v0.33"
    block_size: int = 16
    num_gpu_blocks: int = 64
    num_cpu_blocks: int = 0  # V0's swap pool (v0.6 only)
    max_num_seqs: int = 8
    max_num_batched_tokens: int = 256
    max_model_len: int | None = None  # None: pykv fits it (the model's, cut to the pool); the case then records it
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = False
    preemption_mode: str = "recompute"  # v0.6: recompute | swap (V0 "auto" is not a vLLM flag value)
    watermark: float | None = None  # None: the release's default (v0.6: 0.01; v0.33: 0.0; v0.10 has none)
    priority_scheduling: bool = False  # vLLM's --scheduling-policy priority (pykv: preemption_victim="priority")
    num_offload_blocks: int | None = None  # v0.33's CPU offloading tier, in blocks


@dataclass
class CaseRequest:
    request_id: str
    prompt_token_ids: list[int]
    max_tokens: int
    arrival_step: int = 0  # added before the step whose number of steps done so far reaches it
    priority: int = 0
    n: int = 1
    # The tokens pykv produced, one list per sequence (sequence k of request r is "r#k" on both sides);
    # filled by pykv's side, fed back by the vLLM driver so prefix hashes and stops agree.
    output_token_ids: list[list[int]] = field(default_factory=list)


@dataclass
class Case:
    name: str
    config: CaseConfig
    requests: list[CaseRequest]
    max_steps: int = 2000
    # Explicit, named normalisations the vLLM driver applies (see oracle/compare.py NORMALISATIONS).
    normalise: list[str] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Case":
        return cls(
            name=raw["name"],
            config=CaseConfig(**raw["config"]),
            requests=[CaseRequest(**r) for r in raw["requests"]],
            max_steps=raw.get("max_steps", 2000),
            normalise=list(raw.get("normalise", [])),
            note=raw.get("note", ""),
        )


@dataclass
class StepTrace:
    """One scheduling step, as the scheduler decided it and the queues stood after it."""

    step: int  # 1-based
    scheduled: list[list[Any]]  # [request_id, start (computed tokens before), num_new_tokens] in batch order
    preempted: list[list[Any]]  # [request_id, mode or None] in the order they were preempted
    swapped_in: list[str]
    waiting: list[str]  # queue contents after the step, in queue order
    running: list[str]
    swapped: list[str]
    free_blocks: int  # free device blocks after the step (cached-but-free blocks count as free)
    finished: list[str]  # finished this step (stopped, length, ignored, aborted), in finishing order

    def field_names(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)]


@dataclass
class Trace:
    side: str  # "pykv v0.33" | "vllm 0.33.0" ...
    case: str
    steps: list[StepTrace] = field(default_factory=list)
    num_preemptions: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # set when the side stopped early (an exception, or max_steps)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Trace":
        return cls(
            side=raw["side"],
            case=raw["case"],
            steps=[StepTrace(**s) for s in raw["steps"]],
            num_preemptions=raw.get("num_preemptions", 0),
            counters=dict(raw.get("counters", {})),
            error=raw.get("error"),
        )


def dump(obj: Any, path: str | Path) -> None:
    data = obj.to_dict() if hasattr(obj, "to_dict") else obj
    Path(path).write_text(json.dumps({"format": FORMAT_VERSION, "data": data}))


def load_raw(path: str | Path) -> Any:
    raw = json.loads(Path(path).read_text())
    if raw.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: oracle format {raw.get('format')!r}, expected {FORMAT_VERSION}")
    return raw["data"]


def load_cases(path: str | Path) -> list[Case]:
    data = load_raw(path)
    return [Case.from_dict(c) for c in (data if isinstance(data, list) else [data])]


def load_traces(path: str | Path) -> list[Trace]:
    data = load_raw(path)
    return [Trace.from_dict(t) for t in (data if isinstance(data, list) else [data])]


def dump_list(items: list[Any], path: str | Path) -> None:
    dump([i.to_dict() for i in items], path)
