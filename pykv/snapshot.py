"""Snapshot and StepReport: everything the UI (or a notebook) may draw, as plain JSON-able data."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Optional

from pykv.request import RequestOutput
from pykv.scheduler import PreemptionEvent, ScheduledChunk


@dataclass(frozen=True)
class StepReport:
    """What one ``LLMEngine.step()`` did."""

    step: int
    scheduled: list[str]  # request ids run this step, in batch order
    chunks: list[ScheduledChunk]  # per scheduled request: start, tokens, prefill or decode
    preempted: list[PreemptionEvent]
    finished: list[RequestOutput]  # finished (or ignored) this step
    num_batched_tokens: int
    forward_time_s: float  # measured forward pass, on `device`
    step_time_s: float  # measured whole step: schedule + prepare + forward + sample + update
    device: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class BlockView:
    block_id: int
    pool: str  # "gpu" (the device pool, whatever the device is)
    ref_cnt: int
    owners: list[str]  # request ids whose block tables hold it
    block_hash: Optional[str]  # hex of the prefix hash while cached
    tokens_filled: int
    state: str  # "free" (ref 0, no hash) | "cached" (ref 0, hash kept) | "used" (ref > 0)
    free_queue_position: Optional[int]  # 0 = next to be handed out (and evicted)


@dataclass(frozen=True)
class RequestView:
    request_id: str
    status: str
    num_prompt_tokens: int
    num_output_tokens: int
    num_computed_tokens: int
    block_table: list[int]  # logical index -> physical block id
    num_preemptions: int
    text: str


@dataclass(frozen=True)
class Snapshot:
    step: int
    device: str
    block_size: int
    queues: dict[str, list[str]]  # "waiting", "running", "swapped": request ids in queue order
    blocks: list[BlockView]
    requests: list[RequestView]  # unfinished requests, then finished ones
    metrics: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Snapshot":
        raw = json.loads(text)
        raw["blocks"] = [BlockView(**b) for b in raw["blocks"]]
        raw["requests"] = [RequestView(**r) for r in raw["requests"]]
        return cls(**raw)
