"""Headless command line: ``python -m pykv run`` drives a workload with vLLM's flag names and prints
vLLM-style logs and a summary; ``python -m pykv generate`` completes one prompt."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, Sequence

from pykv.config import ATTENTION_BACKENDS, DTYPES, PREEMPTION_MODES, SWAP_COPIES, SWAP_FALLBACKS, EngineConfig
from pykv.engine import LLMEngine
from pykv.request import SamplingParams
from pykv.workload import PRESETS, Workload, WorkloadRunner, make_workload


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    d = EngineConfig()
    p.add_argument("--model", default=d.model, help="'tiny' (shipped) or a local HF Llama/Qwen2 checkpoint folder")
    p.add_argument("--device", default=d.device, help="cpu or cuda")
    p.add_argument("--attention-backend", default=d.attention_backend, choices=ATTENTION_BACKENDS)
    p.add_argument("--dtype", default=d.dtype, choices=DTYPES)
    p.add_argument("--block-size", type=int, default=d.block_size, help="tokens per KV block")
    p.add_argument("--num-gpu-blocks", type=int, default=d.num_gpu_blocks, help="device KV pool size, in blocks")
    p.add_argument("--gpu-memory-utilization", type=float, default=None,
                   help="CUDA only: size the device pool from this share of GPU memory instead")
    p.add_argument("--swap-space", type=float, default=d.swap_space, help="CPU swap pool, GiB")
    p.add_argument("--num-cpu-blocks", type=int, default=None, help="CPU swap pool in blocks (overrides --swap-space)")
    p.add_argument("--max-num-seqs", type=int, default=d.max_num_seqs)
    p.add_argument("--max-num-batched-tokens", type=int, default=d.max_num_batched_tokens)
    p.add_argument("--preemption-mode", default=d.preemption_mode, choices=PREEMPTION_MODES)
    p.add_argument("--swap-fallback", default=d.swap_fallback, choices=SWAP_FALLBACKS)
    p.add_argument("--swap-copy", default=d.swap_copy, choices=SWAP_COPIES)
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=d.enable_prefix_caching)
    p.add_argument("--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=d.enable_chunked_prefill)
    p.add_argument("--seed", type=int, default=d.seed)


def config_from_args(args: argparse.Namespace, **extra) -> EngineConfig:
    return EngineConfig(
        model=args.model, device=args.device, attention_backend=args.attention_backend, dtype=args.dtype,
        block_size=args.block_size, num_gpu_blocks=args.num_gpu_blocks, gpu_memory_utilization=args.gpu_memory_utilization,
        swap_space=args.swap_space, num_cpu_blocks=args.num_cpu_blocks, max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens, preemption_mode=args.preemption_mode,
        swap_fallback=args.swap_fallback, swap_copy=args.swap_copy, enable_prefix_caching=args.enable_prefix_caching,
        enable_chunked_prefill=args.enable_chunked_prefill, seed=args.seed, **extra,
    )


def load_workload(args: argparse.Namespace) -> Workload:
    if args.workload in PRESETS:
        kwargs = {k: v for k, v in (("n", args.num_requests), ("max_tokens", args.max_tokens)) if v is not None}
        return make_workload(args.workload, seed=args.seed, **kwargs)
    return Workload.load(args.workload)


def summary(engine: LLMEngine, workload_ids: list[str], seconds: float) -> str:
    snap = engine.snapshot()
    rows = [("request", "status", "prompt", "output", "preempt", "recomputed", "swap KiB", "TTFT ms")]
    for rid in workload_ids:
        r = snap.request(rid)
        ttft = "-" if r.ttft_s is None else f"{r.ttft_s * 1e3:.1f}"
        rows.append((rid, r.status, str(r.num_prompt_tokens), str(r.num_output_tokens), str(r.num_preemptions),
                     str(r.recomputed_tokens), f"{r.swap_bytes / 1024:.0f}", ttft))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    m = engine.metrics
    out_tokens = m.value("vllm:generation_tokens_total")
    lines += [
        "",
        f"steps: {engine.step_count}   wall: {seconds:.2f} s on {engine.config.device}   "
        f"output tokens/s: {out_tokens / max(seconds, 1e-9):.1f}",
        f"preemptions: {m.value('vllm:num_preemptions_total'):.0f}   recomputed tokens: "
        f"{m.value('pykv:recomputed_tokens_total'):.0f} ({m.value('pykv:recompute_seconds_total') * 1e3:.1f} ms measured)   "
        f"swapped out: {m.value('pykv:swapped_out_bytes_total') / 1024:.0f} KiB "
        f"({m.value('pykv:swap_out_seconds_total') * 1e3:.2f} ms measured)",
        f"prefix cache: {m.value('vllm:prefix_cache_hits_total'):.0f} / {m.value('vllm:prefix_cache_queries_total'):.0f} "
        f"tokens hit (own after preemption: {m.value('pykv:prefix_cache_hits_own_total'):.0f}, "
        f"shared: {m.value('pykv:prefix_cache_hits_shared_total'):.0f})",
    ]
    return "\n".join(lines)


def cmd_run(args: argparse.Namespace) -> int:
    import time

    workload = load_workload(args)
    if args.export_workload:
        with open(args.export_workload, "w") as f:
            f.write(workload.to_json())
    engine = LLMEngine(config_from_args(args, log_stats_interval=args.log_stats_interval, history_size=0))
    runner = WorkloadRunner(engine, workload)
    t0 = time.perf_counter()
    runner.run(max_steps=args.max_steps)
    print(summary(engine, runner.request_ids, time.perf_counter() - t0))
    if not runner.done():
        print(f"stopped after --max-steps {args.max_steps} with requests unfinished", file=sys.stderr)
        return 1
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    engine = LLMEngine(config_from_args(args, history_size=0))
    params = SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature)
    (out,) = engine.generate([args.prompt], params)
    print(args.prompt + out.text)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    import time

    import pandas as pd

    from pykv.sweep import SweepSpec, parse_values, run_sweep
    from pykv.ui.lab import configure_torch_threads

    axis, text = next((a, t) for a, t in (("num_gpu_blocks", args.pool_sizes), ("block_size", args.block_sizes),
                                           ("max_num_seqs", args.max_num_seqs_values)) if t is not None)
    given = {k: v for k, v in (("n", args.num_requests), ("max_tokens", args.max_tokens)) if v is not None}
    spec = SweepSpec(
        workload=args.workload, workload_args=SweepSpec().workload_args | given, seed=args.seed, axis=axis,
        values=parse_values(text), modes=tuple(m.strip() for m in args.modes.split(",")),
        base=config_from_args(args, history_size=0, log_stats_interval=10**9),
    )
    logging.getLogger("pykv").setLevel(logging.ERROR)  # a sweep's preemption warnings would drown the table
    configure_torch_threads()  # the Sweep page's thread policy, so their timings compare

    def progress(done: int, total: int, row: dict) -> None:
        bar = "#" * (20 * done // total)
        print(f"\r[{bar:<20}] {done}/{total}  {row['mode']:>16} {axis}={row['value']:<5} "
              f"{row['preemptions']:>4} preemptions  {row['wall_s']:.2f} s", end="", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    result = run_sweep(spec, on_progress=progress)
    print(f"\n{len(result.runs)} runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    columns = ["mode", "value", "preemptions", "recomputed_tokens", "swapped_bytes", "wall_s", "tokens_per_s",
               "recompute_s", "swap_s", "modelled_pcie_gen5_s", "ttft_p50_s", "tpot_p50_s"]
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(result.runs[columns].rename(columns={"value": axis}).to_string(index=False))
    print(f"device: {spec.base.device} (measured); modelled_pcie_* columns are modelled, not measured")
    if args.out:
        result.runs.to_csv(args.out, index=False)
        print(f"wrote {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pykv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a workload, printing vLLM-style logs and a summary table")
    add_engine_flags(run)
    run.add_argument("--workload", default="storm", help=f"a preset ({', '.join(PRESETS)}) or a workload JSON file")
    run.add_argument("--num-requests", type=int, default=None, help="preset size")
    run.add_argument("--max-tokens", type=int, default=None, help="preset max_tokens per request")
    run.add_argument("--export-workload", default=None, help="write the workload as JSON to this path")
    run.add_argument("--log-stats-interval", type=int, default=10, help="steps between stats log lines")
    run.add_argument("--max-steps", type=int, default=100_000)
    run.set_defaults(func=cmd_run)
    sweep = sub.add_parser("sweep", help="run a workload over pool sizes (or block sizes, max_num_seqs) per mode")
    add_engine_flags(sweep)
    axis = sweep.add_mutually_exclusive_group()
    axis.add_argument("--pool-sizes", default=None, help="device pool sizes in blocks, e.g. 16:128:16 (the default, "
                      "24:64:8, with the default workload is the canonical storm sweep)")
    axis.add_argument("--block-sizes", default=None, help="block sizes at a fixed pool capacity, e.g. 4,8,16,32")
    axis.add_argument("--max-num-seqs-values", default=None, help="max_num_seqs values, e.g. 2,4,8,16")
    sweep.add_argument("--modes", default="recompute,swap", help="comma list of: recompute, swap, swap per-block, "
                       "recompute+prefix, swap+prefix")
    sweep.add_argument("--workload", default="storm", help=f"a preset: {', '.join(PRESETS)}")
    sweep.add_argument("--num-requests", type=int, default=None, help="preset size (default 8)")
    sweep.add_argument("--max-tokens", type=int, default=None, help="preset max_tokens per request (default 96)")
    sweep.add_argument("--out", default=None, help="write the runs as CSV")
    sweep.set_defaults(func=cmd_sweep, pool_sizes_default="24:64:8")
    gen = sub.add_parser("generate", help="complete one prompt")
    add_engine_flags(gen)
    gen.add_argument("prompt")
    gen.add_argument("--max-tokens", type=int, default=48)
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.set_defaults(func=cmd_generate)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "sweep" and not (args.pool_sizes or args.block_sizes or args.max_num_seqs_values):
        args.pool_sizes = args.pool_sizes_default
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(asctime)s [%(name)s] %(message)s",
                        datefmt="%m-%d %H:%M:%S", stream=sys.stderr)
    try:
        return args.func(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
