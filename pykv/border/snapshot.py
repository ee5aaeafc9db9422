"""Snapshot: the engine's whole state after a step (every block, block table, queue, preemption and
metric) as frozen, typed data; JSON only at the edge (``to_json`` / ``from_json`` round-trip exactly).
A border type: it imports nothing from the engine."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from pykv.border.metric_names import GPU_CACHE_USAGE, KV_CACHE_USAGE, Metric, kv_usage, read_metric, read_optional
from pykv.border.step_report import PreemptionView, StepReport
from pykv.border.vllm_profiles import DEFAULT_PROFILE, PROFILES, VllmProfile


@dataclass(frozen=True)
class BlockView:
    block_id: int
    pool: str  # "gpu" (the device pool, whatever the device is) or "cpu" (the swap pool, or the offloading tier)
    ref_cnt: int
    owners: list[str]  # request ids whose block tables hold it
    logical_index: list[int]  # its index in each owner's block table (same order as owners)
    block_hash: str | None  # hex of the prefix hash while cached
    tokens_filled: int
    state: str  # "free" (ref 0, no hash) | "cached" (ref 0, hash kept) | "used" (ref > 0) | "null" (V1's block 0)
    free_queue_position: int | None  # 0 = next to be handed out (and evicted)


@dataclass(frozen=True)
class RequestView:
    request_id: str
    status: str
    num_prompt_tokens: int
    num_output_tokens: int
    num_computed_tokens: int
    output_token_ids: list[int]  # every token it has produced so far
    block_table: list[int]  # logical index -> physical block id, in the pool the request is in
    pool: str | None  # "gpu", "cpu" (swapped) or None (holds no blocks)
    num_preemptions: int
    recomputed_tokens: int
    recompute_s: float
    swapped_bytes: int  # KV bytes swapped out, each swap counted once
    swap_s: float
    ttft_s: float | None
    text: str
    arrival_step: int = 0  # the engine's step count when the request was added (it waits from snapshots[k])


@dataclass(frozen=True)
class Snapshot:
    step: int
    device: str
    block_size: int
    bytes_per_block: int
    queues: dict[str, list[str]]  # "waiting", "running", "swapped": request ids in queue order
    blocks: list[BlockView]  # the device pool, then the CPU pool
    requests: list[RequestView]  # unfinished requests, then finished ones in finishing order
    preemptions: list[PreemptionView]  # every preemption so far, with its cost as known at this step
    metrics: dict[str, float]  # the engine's Prometheus samples by exposition name
    report: StepReport | None = None  # the step that led here
    vllm_profile: str = DEFAULT_PROFILE  # the vLLM release whose rules and metric names the engine follows
    cpu_pool: str | None = None  # what the "cpu" blocks are: "swap" (V0's swap pool), "offload" (V1's tier), None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Snapshot":
        raw = json.loads(text)
        raw["blocks"] = [BlockView(**b) for b in raw["blocks"]]
        raw["requests"] = [RequestView(**r) for r in raw["requests"]]
        raw["preemptions"] = [PreemptionView.from_dict(p) for p in raw["preemptions"]]
        raw["report"] = None if raw["report"] is None else StepReport.from_dict(raw["report"])
        return cls(**raw)

    @property
    def profile(self) -> VllmProfile | None:
        """The vLLM profile the engine followed; None for a release this build does not know."""
        return PROFILES.get(self.vllm_profile)

    def metric(self, metric: Metric | str) -> float:
        """A metric's value, by its entry in ``pykv.border.metric_names`` (or its sample name): raises on a name the
        table lacks, and on a metric the profile does not export (ask for that with ``optional_metric``)."""
        return read_metric(self.metrics, metric, self.profile)

    def optional_metric(self, metric: Metric | str) -> float | None:
        """A metric's value, or None where the profile does not export it."""
        return read_optional(self.metrics, metric, self.profile)

    def kv_usage_metric(self) -> Metric:
        """The device pool's usage gauge under the profile's name; for an unknown release, whichever it holds."""
        if self.profile is not None:
            return kv_usage(self.profile)
        return KV_CACHE_USAGE if KV_CACHE_USAGE.sample in self.metrics else GPU_CACHE_USAGE  # 0.10.2 has both

    def block(self, pool: str, block_id: int) -> BlockView:
        return next(b for b in self.blocks if b.pool == pool and b.block_id == block_id)

    def request(self, request_id: str) -> RequestView:
        return next(r for r in self.requests if r.request_id == request_id)


@dataclass(frozen=True)
class SnapshotDiff:
    """Which blocks ((pool, id)) and requests changed between two snapshots, for highlighting."""

    blocks: set[tuple[str, int]]
    requests: set[str]


def _block_look(b: BlockView) -> tuple:
    """What a still picture of a block shows: a free block that only moved in the free queue has not changed
    (at a swap-out every free CPU block moves up one place; outlining them all hid the 6 that changed)."""
    return b.state, b.ref_cnt, tuple(b.owners), tuple(b.logical_index), b.tokens_filled, b.block_hash


def diff_snapshots(before: Snapshot, after: Snapshot) -> SnapshotDiff:
    old_blocks = {(b.pool, b.block_id): _block_look(b) for b in before.blocks}
    old_requests = {r.request_id: r for r in before.requests}
    return SnapshotDiff(
        blocks={(b.pool, b.block_id) for b in after.blocks if old_blocks.get((b.pool, b.block_id)) != _block_look(b)},
        requests={r.request_id for r in after.requests if old_requests.get(r.request_id) != r},
    )
