"""``python -m pykv estimate``: the GPU cost model from the command line, the same figures as
``pykv.gpu_model.estimate`` (every one modelled, never measured).

    python -m pykv estimate --gpu H100-SXM --model llama-3.1-8b --prefill 2048
    python -m pykv estimate --gpu A100-80GB-SXM --model llama-2-70b --dtype fp16 --tp 4 --decode 64 --context 1152
    python -m pykv estimate --list
"""

from __future__ import annotations

import argparse

from pykv.cli.errors import UsageError
from pykv.gpu_model import GPUS, MODELS, estimate
from pykv.gpu_model.calibration import calibration_rows
from pykv.gpu_model.estimate import DTYPES, Chunk
from pykv.gpu_model.explain import target_facts
from pykv.gpu_model.pool import blocks_for_gib

MAX_TOKENS = 10_000_000  # any count flag: far past any context, so no flag asks for an absurd loop


def add_parser(sub) -> None:
    p = sub.add_parser(
        "estimate",
        help="what a step would cost on a named GPU and model (the GPU cost model)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--gpu", default="H100-SXM", help=f"one of: {', '.join(GPUS)} (case-insensitive)")
    p.add_argument("--model", default="llama-3.1-8b", help=f"one of: {', '.join(MODELS)} (case-insensitive)")
    p.add_argument("--dtype", default="bf16", choices=list(DTYPES), help="weights (and KV cache) dtype")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs")
    p.add_argument("--prefill", type=int, default=None, help="tokens to prefill in one step (default 2048)")
    p.add_argument("--batch", type=int, default=1, help="sequences prefilling --prefill tokens each")
    p.add_argument("--decode", type=int, default=None, metavar="BATCH", help="a decode step of this many sequences")
    p.add_argument(
        "--context",
        type=int,
        default=None,
        help="tokens already cached per sequence (default: 0 for --prefill, 1024 for --decode)",
    )
    p.add_argument("--copy-bytes", type=int, default=None, help="a host<->device copy of this many bytes")
    p.add_argument("--direction", default="h2d", choices=["h2d", "d2h"])
    p.add_argument("--pageable", action="store_true", help="the copy's host memory is pageable, not pinned")
    p.add_argument("--copies", type=int, default=1, help="the copy is issued as this many copies")
    p.add_argument("--pool-gib", type=float, default=None, help="a KV pool of this many GiB of the model's KV: blocks")
    p.add_argument("--block-size", type=int, default=16, help="tokens per KV block for --pool-gib")
    p.add_argument("--list", action="store_true", help="list the GPUs, models and the calibration table")
    p.set_defaults(func=cmd_estimate)


# The least each count flag may be: a step of 0 sequences or 0 tokens is no step (it was read as 1, or as the default)
_AT_LEAST = {"prefill": 1, "batch": 1, "decode": 1, "context": 0, "copy_bytes": 0, "copies": 1, "block_size": 1}


def _bounded(args: argparse.Namespace) -> None:
    for flag, low in _AT_LEAST.items():
        value = getattr(args, flag)
        high = MAX_TOKENS if flag != "copy_bytes" else 2**50
        if value is not None and not low <= value <= high:
            raise UsageError(f"--{flag.replace('_', '-')} {value} is out of range; use {low} to {high:,}.")


def cmd_estimate(args: argparse.Namespace) -> int:
    if args.list:
        print("GPUs:   " + ", ".join(GPUS))
        print("models: " + ", ".join(MODELS))
        print("calibration (one table for every target):")
        for name, value, source in calibration_rows():
            print(f"  {name} = {value:g}   ({source})")
        return 0
    _bounded(args)
    est = estimate(args.gpu, args.model, args.dtype, args.tp)
    blocks = None if args.pool_gib is None else blocks_for_gib(est, args.pool_gib, args.block_size)  # checked first
    print(f"modelled {est.label} ({est.dtype}, TP{est.tp}): every figure below is modelled, not measured")
    for what, fact in target_facts(est):
        print(f"  {what}: {fact}")
    asked = [x is not None for x in (args.prefill, args.decode, args.copy_bytes, args.pool_gib)]
    if args.prefill is not None or not any(asked):
        tokens, context = args.prefill or 2048, args.context or 0
        cost = est.forward_cost([Chunk(context, tokens)] * args.batch)
        print(
            f"prefill {tokens} tokens x {args.batch} (after {context} cached): "
            f"{est.prefill_ms(tokens, args.batch, context):.3f} ms  (linear {cost.linear:.3f}, attention "
            f"{cost.attention:.3f}, overhead {cost.overhead:.3f}, all-reduce {cost.allreduce:.3f} ms); "
            f"{est.prefill_ms(tokens, args.batch, context) / (tokens * args.batch) * 1e3:.1f} µs per token"
        )
    if args.decode is not None or not any(asked):
        batch, context = args.decode or 1, args.context if args.context is not None else 1024
        print(f"decode step, batch {batch} at context {context}: {est.decode_step_ms(batch, context):.3f} ms")
    if args.copy_bytes is not None or not any(asked):
        size = args.copy_bytes if args.copy_bytes is not None else 2**30
        ms = est.copy_ms(size, args.direction, not args.pageable, args.copies)
        print(
            f"copy {size:,} bytes {args.direction} ({'pageable' if args.pageable else 'pinned'}, {args.copies} "
            f"copies) over {est.link.name}: {ms:.3f} ms"
        )
    if blocks is not None:
        print(
            f"KV pool of {args.pool_gib:g} GiB: {blocks:,} blocks of {args.block_size} tokens "
            f"({blocks * args.block_size:,} tokens of {est.shape.name} KV)"
        )
    return 0
