"""Kernel benchmark, ``triton.testing`` style: each benchmark is a ``triton.testing.Benchmark`` whose
lines are the Triton kernel and its torch reference (plus SDPA for prefill), printed as a table.

    python -m bench.bench_kernels            # CUDA: real shapes (bf16, 32/8 heads, head dim 128)
    python -m bench.bench_kernels --quick    # tiny shapes; the default without CUDA (interpreter)

On CPU the Triton lines run through Triton's interpreter: they show that the real kernels run, not
how fast they would be on a GPU. Timing: ``triton.testing.do_bench`` on CUDA, median of a few calls
on CPU. (``Benchmark.run`` would need pandas and matplotlib; the small table printer below doesn't.)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

from pykv_kernels import reference
from pykv_kernels.launch_utils import bench_ms
from pykv_kernels.paged_decode import launch_decode, paged_decode_attention
from pykv_kernels.paged_prefill import paged_prefill_attention
from pykv_kernels.store_kv import store_kv
from pykv_kernels.testing import make_paged_case

# Not `import triton.testing` (isort would hoist it above the kernels): triton comes through
# pykv_kernels.triton_utils, which switches the interpreter on without CUDA first; `triton.testing` is
# imported by `import triton` itself.
from pykv_kernels.triton_utils import triton


@dataclass(frozen=True)
class Shapes:
    device: str
    dtype: torch.dtype
    heads: int
    kv_heads: int
    head_dim: int
    block_size: int
    batch: int
    contexts: list[int]  # decode context lengths
    long_contexts: list[int]  # batch-1 decode (split-K)
    prefill_tokens: list[int]
    store_tokens: list[int]


def shapes(device: str, quick: bool) -> Shapes:
    if quick:
        dtype = torch.float32 if device == "cpu" else torch.bfloat16
        return Shapes(device, dtype, 4, 2, 32, 16, 2, [16, 64], [128], [16, 48], [16, 64])
    return Shapes(
        device,
        torch.bfloat16,
        32,
        8,
        128,
        16,
        64,
        [512, 1024, 2048, 4096],
        [8192, 32768],
        [512, 1024, 2048, 4096],
        [256, 4096, 16384],
    )


def bench_lines(fns: dict, device: str) -> dict[str, float]:
    return {name: bench_ms(fn, device) for name, fn in fns.items()}


def print_table(bench: triton.testing.Benchmark, rows: list[tuple[int, dict[str, float]]], work) -> None:
    """One row per x value: microseconds per line, then the rate (``bench.ylabel``) per line."""
    names = bench.line_names
    w = max(14, *(len(n) + 6 for n in names))
    print(f"\n{bench.plot_name}  ({bench.ylabel}; {bench.args})")
    header = f"{bench.x_names[0]:>10} " + " ".join(f"{n + ' us':>{w}}" for n in names)
    header += " " + " ".join(f"{n + ' rate':>{w}}" for n in names)
    print(header)
    for x, ms in rows:
        times = " ".join(f"{ms[n] * 1e3:{w}.1f}" for n in names)
        rates = " ".join(f"{work(x) / (ms[n] * 1e-3) / 1e9:{w}.4g}" for n in names)
        print(f"{x:>10} {times} {rates}")


def run_store(s: Shapes) -> None:
    bench = triton.testing.Benchmark(
        x_names=["num_tokens"],
        x_vals=s.store_tokens,
        line_arg="provider",
        line_vals=["triton", "torch"],
        line_names=["triton", "torch"],
        ylabel="GB/s moved (read + write K and V)",
        plot_name="store_kv",
        args={"kv_heads": s.kv_heads, "head_dim": s.head_dim, "dtype": str(s.dtype)},
    )
    rows = []
    for n in s.store_tokens:
        num_blocks = -(-n // s.block_size) * 2
        cache = torch.zeros(2, num_blocks, s.block_size, s.kv_heads, s.head_dim, dtype=s.dtype, device=s.device)
        key = torch.randn(n, s.kv_heads, s.head_dim, dtype=s.dtype, device=s.device)
        value = torch.randn_like(key)
        slots = torch.randperm(num_blocks * s.block_size, device=s.device)[:n]
        args = (key, value, cache[0], cache[1], slots)
        rows.append(
            (n, bench_lines({"triton": lambda: store_kv(*args), "torch": lambda: reference.store_kv(*args)}, s.device))
        )
    row_bytes = 2 * 2 * s.kv_heads * s.head_dim * torch.finfo(s.dtype).bits // 8
    print_table(bench, rows, lambda n: n * row_bytes)


def run_decode(s: Shapes, batch: int, contexts: list[int], name: str, split_k: bool = False) -> None:
    """``split_k``: lines for split-K (auto count on CUDA, 4 splits on CPU) and one pass, beside torch."""
    lines = ["triton-splitk", "triton-1pass", "torch"] if split_k else ["triton", "torch"]
    bench = triton.testing.Benchmark(
        x_names=["context"],
        x_vals=contexts,
        line_arg="provider",
        line_vals=lines,
        line_names=lines,
        ylabel="GB/s of K/V read",
        plot_name=name,
        args={
            "batch": batch,
            "heads": f"{s.heads}/{s.kv_heads}",
            "head_dim": s.head_dim,
            "dtype": str(s.dtype),
            "block_size": s.block_size,
        },
    )
    rows = []
    for ctx in contexts:
        c = make_paged_case(
            s.heads,
            s.kv_heads,
            s.head_dim,
            s.block_size,
            seq_lens=[ctx] * batch,
            decode=True,
            dtype=s.dtype,
            device=s.device,
        )
        args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
        fns = {"triton": lambda: paged_decode_attention(*args)}
        if split_k:
            splits = None if s.device == "cuda" else 4
            fns = {
                "triton-splitk": lambda: launch_decode(*args, num_splits=splits),
                "triton-1pass": lambda: launch_decode(*args, num_splits=1),
            }
        fns["torch"] = lambda: reference.paged_decode_attention(*args)
        rows.append((ctx, bench_lines(fns, s.device)))
        del c
    token_bytes = 2 * s.kv_heads * s.head_dim * torch.finfo(s.dtype).bits // 8
    print_table(bench, rows, lambda ctx: batch * ctx * token_bytes)


def run_prefill(s: Shapes) -> None:
    bench = triton.testing.Benchmark(
        x_names=["tokens"],
        x_vals=s.prefill_tokens,
        line_arg="provider",
        line_vals=["triton", "torch", "sdpa"],
        line_names=["triton", "torch", "sdpa"],
        ylabel="causal GFLOP/s",
        plot_name="paged_prefill",
        args={"heads": f"{s.heads}/{s.kv_heads}", "head_dim": s.head_dim, "dtype": str(s.dtype)},
    )
    rows = []
    for n in s.prefill_tokens:
        c = make_paged_case(
            s.heads, s.kv_heads, s.head_dim, s.block_size, seq_lens=[n], query_lens=[n], dtype=s.dtype, device=s.device
        )
        args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
        # SDPA on the same K/V, gathered into contiguous (1, kv_heads, n, head_dim) tensors beforehand.
        k = reference.gather_kv(c.k_cache, c.block_tables[0], n).transpose(0, 1)[None].contiguous()
        v = reference.gather_kv(c.v_cache, c.block_tables[0], n).transpose(0, 1)[None].contiguous()
        q = c.query.transpose(0, 1)[None].contiguous()  # (1, heads, n, head_dim)

        def sdpa():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

        rows.append(
            (
                n,
                bench_lines(
                    {
                        "triton": lambda: paged_prefill_attention(*args),
                        "torch": lambda: reference.paged_prefill_attention(*args),
                        "sdpa": sdpa,
                    },
                    s.device,
                ),
            )
        )
        del c
    print_table(bench, rows, lambda n: 2 * 2 * s.heads * s.head_dim * n * (n + 1) / 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes (always on without CUDA)")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(1)  # tiny shapes: threads only add noise
    s = shapes(device, quick=args.quick or device == "cpu")
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU, Triton interpreter"
    print(f"pykv kernel benchmark on {where}; dtype {s.dtype}")
    run_store(s)
    run_decode(s, s.batch, s.contexts, "paged_decode")
    run_decode(s, 1, s.long_contexts, "paged_decode_batch1", split_k=True)
    run_prefill(s)


if __name__ == "__main__":
    main()
