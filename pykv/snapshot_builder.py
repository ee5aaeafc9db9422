"""Read an engine's live state into a Snapshot (a copy: later steps never change it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykv.snapshot import BlockView, RequestView, Snapshot

if TYPE_CHECKING:
    from pykv.engine import LLMEngine


def build_snapshot(engine: "LLMEngine") -> Snapshot:
    kv, sched = engine.kv, engine.scheduler
    pool = kv.pool
    owners: dict[int, list[str]] = {}
    for request_id, table in kv.block_tables.items():
        for block_id in table:
            owners.setdefault(block_id, []).append(request_id)
    queue_pos = {block_id: i for i, block_id in enumerate(pool.free_queue)}
    blocks = [
        BlockView(
            block_id=b.block_id,
            pool="gpu",
            ref_cnt=b.ref_cnt,
            owners=owners.get(b.block_id, []),
            block_hash=None if b.block_hash is None else f"{b.block_hash & (2**64 - 1):016x}",
            tokens_filled=b.num_tokens_filled,
            state="used" if b.ref_cnt else ("cached" if b.block_hash is not None else "free"),
            free_queue_position=queue_pos.get(b.block_id),
        )
        for b in pool.blocks
    ]
    live = [RequestView(
        request_id=r.request_id,
        status=r.status.value,
        num_prompt_tokens=r.num_prompt_tokens,
        num_output_tokens=len(r.output_token_ids),
        num_computed_tokens=r.num_computed_tokens,
        block_table=list(kv.block_tables.get(r.request_id, [])),
        num_preemptions=r.num_preemptions,
        text=engine.loaded.decode(r.output_token_ids),
    ) for r in sched.requests.values()]
    done = [RequestView(
        request_id=o.request_id,
        status=f"finished_{o.finish_reason}",
        num_prompt_tokens=len(o.prompt_token_ids),
        num_output_tokens=len(o.output_token_ids),
        num_computed_tokens=0,
        block_table=[],
        num_preemptions=o.num_preemptions,
        text=o.text,
    ) for o in engine.outputs.values()]
    return Snapshot(
        step=engine.step_count,
        device=engine.config.device,
        block_size=kv.block_size,
        queues={
            "waiting": [r.request_id for r in sched.waiting],
            "running": [r.request_id for r in sched.running],
            "swapped": [],
        },
        blocks=blocks,
        requests=live + done,
        metrics={
            "kv_cache_usage_perc": pool.usage(),
            "num_preemptions_total": sched.num_preemptions,
            "prefix_cache_queries": kv.prefix_queries,
            "prefix_cache_hits": kv.prefix_hits,
        },
    )
