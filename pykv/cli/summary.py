"""What ``python -m pykv run`` prints after a run: the header naming the engine, then the requests and the
run's measured costs (preemptions, recompute tax, swaps, the offloading tier, prefix cache)."""

from __future__ import annotations

from pykv.engine.llm_engine import LLMEngine


def summary(engine: LLMEngine, workload_ids: list[str], seconds: float) -> str:
    snap = engine.snapshot()
    rows = [("request", "status", "prompt", "output", "preempt", "recomputed", "swap KiB", "TTFT ms")]
    for rid in workload_ids:
        r = snap.request(rid)
        ttft = "-" if r.ttft_s is None else f"{r.ttft_s * 1e3:.1f}"
        rows.append((rid, r.status, str(r.num_prompt_tokens), str(r.num_output_tokens), str(r.num_preemptions),
                     str(r.recomputed_tokens), f"{r.swapped_bytes / 1024:.0f}", ttft))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    m = engine.metrics
    out_tokens = m.value("vllm:generation_tokens_total")
    hits = m.value("pykv:prefix_cache_hits_own_total") + m.value("pykv:prefix_cache_hits_shared_total")
    lines += [
        "",
        f"steps: {engine.step_count}   wall: {seconds:.2f} s on {engine.config.device} ({engine.backend.label} "
        "attention)   "
        f"output tokens/s: {out_tokens / max(seconds, 1e-9):.1f}",
        f"preemptions: {m.value('pykv:num_preemptions_total'):.0f} "
        f"(vllm:num_preemptions_total {m.value('vllm:num_preemptions_total'):.0f})   recomputed tokens: "
        f"{m.value('pykv:recomputed_tokens_total'):.0f} "
        f"({m.value('pykv:recompute_seconds_total') * 1e3:.1f} ms measured)   "
        f"swapped out: {m.value('pykv:swapped_out_bytes_total') / 1024:.0f} KiB "
        f"({m.value('pykv:swap_out_seconds_total') * 1e3:.2f} ms measured)",
        f"prefix cache: {hits:.0f} / {m.value('pykv:prefix_cache_queries_total'):.0f} tokens hit at admission "
        f"(own after preemption: {m.value('pykv:prefix_cache_hits_own_total'):.0f}, "
        f"shared: {m.value('pykv:prefix_cache_hits_shared_total'):.0f})",
        f"recompute tax: {m.value('pykv:recompute_tax'):.1%} of prefill tokens "
        f"({m.value('pykv:recompute_tax_time'):.1%} of prefill time measured)   victim policy: "
        f"{engine.config.preemption_victim}",
    ]
    if engine.kv.offload is not None:
        lines.append(
            f"CPU offloading tier: {m.value('pykv:offload_loaded_tokens_total'):.0f} tokens loaded instead of "
            f"recomputed; stored {m.value('vllm:kv_offload_store_bytes_total') / 1024:.0f} KiB "
            f"({m.value('vllm:kv_offload_store_time_total') * 1e3:.2f} ms measured), loaded "
            f"{m.value('vllm:kv_offload_load_bytes_total') / 1024:.0f} KiB "
            f"({m.value('vllm:kv_offload_load_time_total') * 1e3:.2f} ms measured)")
    return "\n".join(lines)


def engine_header(engine: LLMEngine) -> str:
    """What the engine follows, said once before a run (the log's header)."""
    c, p = engine.config, engine.config.profile
    lines = [f"pykv: vllm_profile={p.name} follows vLLM {p.release} ({p.engine}): {p.summary}. "
             f"{c.num_gpu_blocks} blocks x {c.block_size} tokens on {c.device}, max_model_len {engine.max_model_len}."]
    return "\n".join(lines + engine.startup_lines)
