"""What ``python -m pykv run`` prints after a run: the header naming the engine, then the requests and the
run's measured costs (preemptions, recompute tax, swaps, the offloading tier, prefix cache), from the engine's
typed totals (``LLMEngine.totals()``)."""

from __future__ import annotations

from pykv.border import metric_names as names
from pykv.engine.llm_engine import LLMEngine


def summary(engine: LLMEngine, workload_ids: list[str], seconds: float) -> str:
    snap = engine.snapshot()
    rows = [("request", "status", "prompt", "output", "preempt", "recomputed", "swap KiB", "TTFT ms")]
    for rid in workload_ids:
        r = snap.request(rid)
        ttft = "-" if r.ttft_s is None else f"{r.ttft_s * 1e3:.1f}"
        rows.append(
            (
                rid,
                r.status,
                str(r.num_prompt_tokens),
                str(r.num_output_tokens),
                str(r.num_preemptions),
                str(r.recomputed_tokens),
                f"{r.swapped_bytes / 1024:.0f}",
                ttft,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    t = engine.totals()
    lines += [
        "",
        f"steps: {engine.step_count}   wall: {seconds:.2f} s on {engine.config.device} ({engine.backend.label} "
        "attention)   "
        f"output tokens/s: {t.generation_tokens / max(seconds, 1e-9):.1f}",
        f"preemptions: {t.preemptions} ({names.VLLM_NUM_PREEMPTIONS.sample} {t.release_preemptions})   "
        f"recomputed tokens: {t.recomputed_tokens} ({t.recompute_s * 1e3:.1f} ms measured)   "
        f"swapped out: {t.swapped_out_bytes / 1024:.0f} KiB ({t.swap_out_s * 1e3:.2f} ms measured)",
        f"prefix cache: {t.prefix_hits} / {t.prefix_queries} tokens hit at admission "
        f"(own after preemption: {t.prefix_hits_own}, shared: {t.prefix_hits_shared})",
        f"recompute tax: {t.recompute_tax or 0.0:.1%} of prefill tokens "
        f"({t.recompute_tax_time or 0.0:.1%} of prefill time measured)   victim policy: "
        f"{engine.config.preemption_victim}",
    ]
    if engine.kv.offload is not None:
        lines.append(
            f"CPU offloading tier: {t.offload_loaded_tokens} tokens loaded instead of "
            f"recomputed; stored {t.offload_store_bytes / 1024:.0f} KiB "
            f"({t.offload_store_s * 1e3:.2f} ms measured), loaded "
            f"{t.offload_load_bytes / 1024:.0f} KiB "
            f"({t.offload_load_s * 1e3:.2f} ms measured)"
        )
    return "\n".join(lines)


def engine_header(engine: LLMEngine) -> str:
    """What the engine follows, said once before a run (the log's header)."""
    c, p = engine.config, engine.config.profile
    lines = [
        f"pykv: vllm_profile={p.name} follows vLLM {p.release} ({p.engine}): {p.summary}. "
        f"{c.num_gpu_blocks} blocks x {c.block_size} tokens on {c.device}, max_model_len {engine.max_model_len}."
    ]
    return "\n".join(lines + engine.startup_lines)
