"""Read an engine's live state into a Snapshot (a copy: later steps never change it)."""

from __future__ import annotations

from typing import Callable, Iterable

from pykv.border.request import RequestOutput, RequestStatus
from pykv.border.snapshot import BlockView, RequestView, Snapshot
from pykv.border.step_report import StepReport
from pykv.engine.kv.block_pool import BlockPool
from pykv.engine.kv.kv_cache_manager import KVCacheManager
from pykv.engine.observe.costs import CostLedger
from pykv.engine.sched.scheduler import Scheduler


def _state(ref_cnt: int, cached: bool, null: bool) -> str:
    if null:
        return "null"  # V1's null block: kept back by the pool, never handed out
    return "used" if ref_cnt else ("cached" if cached else "free")


def pool_views(pool: BlockPool, tables: dict[str, list[int]], name: str, stored_only: bool = False) -> list[BlockView]:
    """One view per block. ``stored_only`` (the offloading tier): free-queue positions count the stored blocks only,
    so 0 is the block evicted next (the empty ones are filled first)."""
    owners: dict[int, list[str]] = {}
    logical: dict[int, list[int]] = {}
    for request_id, table in tables.items():
        for index, block_id in enumerate(table):
            owners.setdefault(block_id, []).append(request_id)
            logical.setdefault(block_id, []).append(index)
    queue = [b for b in pool.free_queue if pool.blocks[b].block_hash is not None] if stored_only else pool.free_queue
    queue_pos = {block_id: i for i, block_id in enumerate(queue)}
    views = []
    for b in pool.blocks:
        cached = b.block_hash is not None
        views.append(
            BlockView(
                block_id=b.block_id,
                pool=name,
                ref_cnt=b.ref_cnt,
                owners=owners.get(b.block_id, []),
                logical_index=logical.get(b.block_id, []),
                block_hash=f"{b.block_hash & (2**64 - 1):016x}" if b.block_hash is not None else None,
                tokens_filled=b.num_tokens_filled,
                state=_state(b.ref_cnt, cached, b.block_id == pool.null_block),
                free_queue_position=queue_pos.get(b.block_id),
            )
        )
    return views


def build_snapshot(
    *,
    step: int,
    device: str,
    vllm_profile: str,
    bytes_per_block: int,
    kv: KVCacheManager,
    scheduler: Scheduler,
    outputs: Iterable[RequestOutput],
    ledger: CostLedger,
    metrics: dict[str, float],
    decode: Callable[[list[int]], str],
    report: StepReport | None = None,
) -> Snapshot:
    """The state now, from the engine's parts (typed; never the engine itself)."""

    def view(request_id, status, prompt, output_ids, computed, preemptions, ttft, text, arrival) -> RequestView:
        in_gpu, in_cpu = kv.block_tables.get(request_id), kv.swap.block_tables.get(request_id)
        totals = ledger.totals_for(request_id)
        return RequestView(
            request_id=request_id,
            status=status,
            num_prompt_tokens=prompt,
            num_output_tokens=len(output_ids),
            num_computed_tokens=computed,
            output_token_ids=list(output_ids),
            block_table=list(in_gpu or in_cpu or []),
            pool="gpu" if in_gpu else ("cpu" if in_cpu else None),
            num_preemptions=preemptions,
            recomputed_tokens=int(totals["recomputed_tokens"]),
            recompute_s=totals["recompute_s"],
            swapped_bytes=int(totals["swapped_bytes"]),
            swap_s=totals["swap_s"],
            ttft_s=ttft,
            text=text,
            arrival_step=arrival,
        )

    live = [
        view(
            r.request_id,
            r.status.value,
            r.num_prompt_tokens,
            r.output_token_ids,
            r.num_computed_tokens,
            r.num_preemptions,
            None if r.first_token_time is None else r.first_token_time - r.arrival_time,
            decode(r.output_token_ids),
            r.arrival_step,
        )
        for r in scheduler.requests.values()
    ]
    status_of = {s.finish_reason: s.value for s in RequestStatus if s.is_finished and s.finish_reason != "length"}
    status_of["length"] = RequestStatus.FINISHED_LENGTH.value
    done = [
        view(
            o.request_id,
            o.status or status_of[o.finish_reason],
            len(o.prompt_token_ids),
            o.output_token_ids,
            0,
            o.num_preemptions,
            o.ttft_s,
            o.text,
            o.arrival_step,
        )
        for o in outputs
    ]
    return Snapshot(
        step=step,
        device=device,
        block_size=kv.block_size,
        bytes_per_block=bytes_per_block,
        queues={
            "waiting": [r.request_id for r in scheduler.waiting],
            "running": [r.request_id for r in scheduler.running],
            "swapped": [r.request_id for r in scheduler.swapped],
        },
        blocks=pool_views(kv.pool, kv.block_tables, "gpu")
        + pool_views(kv.cpu_pool, kv.swap.block_tables, "cpu", stored_only=kv.offload is not None),
        requests=live + done,
        preemptions=list(ledger.records),
        metrics=metrics,
        report=report,
        vllm_profile=vllm_profile,
        cpu_pool="offload" if kv.offload is not None else ("swap" if kv.cpu_pool.num_blocks else None),
    )
