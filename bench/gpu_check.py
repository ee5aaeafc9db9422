"""The ONE GPU check: run it once whenever a CUDA machine is at hand, and commit what it writes.

    python -m bench.gpu_check          # ~3-5 minutes on an H200; needs CUDA (exits with a message without)

It (1) runs the kernel tests compiled on CUDA (pytest, same tests CI runs through the interpreter),
then prints and writes to ``bench/results/<date>-<gpu>.txt``:

    BW*      device-to-device copy bandwidth (bytes read + written per second): the reference
    decode   batch 64, context 4096, 32 q / 8 KV heads, head dim 128, bf16, block 16, random block
             table: K/V bytes read per second as a % of BW*           (goal on an H200: >= 70%)
    split-K  batch 1, context 32k, by number of splits, as a % of BW*
    prefill  causal, 4096 tokens, same heads, vs torch SDPA (flash)   (goal: >= 0.5x SDPA throughput)
    store    KV store kernel bandwidth (bytes read + written), as a % of BW*
    H2D/D2H  pinned vs pageable host<->device copy bandwidth, one large and one block-sized copy
    lab      the Playground's default workload end to end on compiled Triton (the lab's "auto"): step
             times beside the torch backend's, and whether the tokens are identical
    model    the GPU cost model (pykv.gpu_model) against this GPU: a real run's measured step times beside
             the predictions for the same steps, and measured copy bandwidths beside the link model's

Each kernel figure is printed for the launcher's default configuration and for a few tile
configurations around it, so the next tuning step starts from data. A failing section prints its
error and the script carries on.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KERNEL_TESTS = [
    "tests/kernels/test_kernels_store.py",
    "tests/kernels/test_kernels_decode.py",
    "tests/kernels/test_kernels_prefill.py",
]
HEADS, KV_HEADS, HEAD_DIM, BLOCK = 32, 8, 128, 16
DEVICE = "cuda"  # module-level device and shapes: tests/kernels/test_kernels_gpu_check.py dry-runs the sections on CPU
DECODE_BATCH, DECODE_CONTEXT, LONG_CONTEXT, PREFILL_TOKENS = 64, 4096, 32768, 4096
STORE_TOKENS, COPY_BYTES = (256, 16384), 2 << 30
PLAYGROUND_STEPS = None  # the Playground section runs the whole storm (the CPU dry run: a few steps)


class Report:
    """Prints lines as they come and keeps them for the results file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def section(self, title: str, fn, *args) -> None:
        self()
        self(f"== {title}")
        try:
            fn(self, *args)
        except Exception:  # one broken section must not cost the others
            self("ERROR:\n" + traceback.format_exc(limit=6))


def gbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def bench_or_none(out: Report, label: str, fn):
    """``do_bench`` milliseconds, or None (printed) where a tile configuration does not fit this GPU."""
    from triton.testing import do_bench

    try:
        return do_bench(fn)
    except Exception as exc:  # e.g. triton.runtime.errors.OutOfResources for a too-large tile
        out(f"  {label}: skipped, {type(exc).__name__}: {str(exc)[:160]}")
        return None


def run_tests(out: Report) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiled, not interpreted
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, "-m", "pytest", "-q", *KERNEL_TESTS]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=480)
    tail = [line for line in proc.stdout.strip().splitlines() if line.strip()]
    if proc.returncode != 0:
        out("\n".join(tail[-40:]))
        out(proc.stderr[-2000:])
    out(f"kernel tests compiled on CUDA: {'PASS' if proc.returncode == 0 else 'FAIL'}: {tail[-1] if tail else ''}")


def copy_bandwidth(out: Report) -> float:
    import torch
    from triton.testing import do_bench

    n = COPY_BYTES  # 2 GiB, far past the L2
    src = torch.empty(n, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src))
    bw = gbps(2 * n, ms)
    out(f"BW* = {bw:.0f} GB/s  (device copy of {n / 2**30:g} GiB: read + written in {ms:.3f} ms)")
    src = dst = None  # free the 4 GiB before the next measurement
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return bw


def decode(out: Report, bw_star: float) -> None:
    import torch
    from triton.testing import do_bench

    from pykv_kernels import reference
    from pykv_kernels.paged_decode import launch_decode
    from pykv_kernels.testing import make_paged_case

    batch, ctx = DECODE_BATCH, DECODE_CONTEXT
    c = make_paged_case(
        HEADS,
        KV_HEADS,
        HEAD_DIM,
        BLOCK,
        seq_lens=[ctx] * batch,
        decode=True,
        dtype=torch.bfloat16,
        device=DEVICE,
        seed=0,
    )
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
    err = (launch_decode(*args).float() - reference.paged_decode_attention(*args).float()).abs().max().item()
    kv_bytes = 2 * batch * ctx * KV_HEADS * HEAD_DIM * 2
    out(
        f"batch {batch}, context {ctx}, {HEADS}/{KV_HEADS} heads, head dim {HEAD_DIM}, bf16, block {BLOCK}, "
        f"random block table; K/V read = {kv_bytes / 1e9:.2f} GB; max |err| vs reference {err:.2e}"
    )
    configs = [None, (32, 4, 2), (64, 4, 3), (64, 8, 3), (128, 4, 2), (128, 8, 3)]  # (block_n, warps, stages)
    for cfg in configs:
        kw = {} if cfg is None else dict(block_n=cfg[0], num_warps=cfg[1], num_stages=cfg[2])
        label = "default" if cfg is None else f"block_n={cfg[0]} warps={cfg[1]} stages={cfg[2]}"
        ms = bench_or_none(out, label, lambda: launch_decode(*args, **kw))
        if ms is None:
            continue
        bw = gbps(kv_bytes, ms)
        out(
            f"  decode {label:32s} {ms * 1e3:8.1f} us  {bw:7.0f} GB/s  {100 * bw / bw_star:5.1f}% of BW*"
            + ("   (goal >= 70%)" if cfg is None else "")
        )
    ms = do_bench(lambda: reference.paged_decode_attention(*args), rep=200)
    out(f"  torch reference                         {ms * 1e3:8.1f} us  {gbps(kv_bytes, ms):7.0f} GB/s")


def split_k(out: Report, bw_star: float) -> None:
    import torch

    from pykv_kernels import reference
    from pykv_kernels.paged_decode import auto_num_splits, launch_decode
    from pykv_kernels.testing import make_paged_case

    ctx = LONG_CONTEXT
    c = make_paged_case(
        HEADS, KV_HEADS, HEAD_DIM, BLOCK, seq_lens=[ctx], decode=True, dtype=torch.bfloat16, device=DEVICE, seed=1
    )
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.scale)
    err = (launch_decode(*args).float() - reference.paged_decode_attention(*args).float()).abs().max().item()
    kv_bytes = 2 * ctx * KV_HEADS * HEAD_DIM * 2
    auto = auto_num_splits(1, KV_HEADS, c.block_tables.shape[1] * BLOCK, c.query.device)
    out(f"batch 1, context {ctx}: K/V read = {kv_bytes / 1e6:.0f} MB; auto splits = {auto}; max |err| {err:.2e}")
    for splits in (None, 1, 8, 16, 32, 64):
        label = f"auto ({auto})" if splits is None else str(splits)
        ms = bench_or_none(out, f"splits {label}", lambda: launch_decode(*args, num_splits=splits))
        if ms is None:
            continue
        bw = gbps(kv_bytes, ms)
        out(f"  splits {label:10s} {ms * 1e3:8.1f} us  {bw:7.0f} GB/s  {100 * bw / bw_star:5.1f}% of BW*")


def prefill(out: Report) -> None:
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench

    from pykv_kernels import reference
    from pykv_kernels.paged_prefill import launch_prefill
    from pykv_kernels.testing import make_paged_case

    n = PREFILL_TOKENS
    c = make_paged_case(
        HEADS, KV_HEADS, HEAD_DIM, BLOCK, seq_lens=[n], query_lens=[n], dtype=torch.bfloat16, device=DEVICE, seed=2
    )
    args = (c.query, c.k_cache, c.v_cache, c.block_tables, c.seq_lens, c.query_start_loc, c.scale)
    q = c.query.transpose(0, 1)[None].contiguous()  # (1, heads, n, head_dim)
    k = reference.gather_kv(c.k_cache, c.block_tables[0], n).transpose(0, 1)[None].contiguous()  # (1, kv, n, d)
    v = reference.gather_kv(c.v_cache, c.block_tables[0], n).transpose(0, 1)[None].contiguous()
    group = HEADS // KV_HEADS
    k_rep, v_rep = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)

    def sdpa_gqa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    def sdpa_rep():  # K/V expanded to every query head: always eligible for the flash backend
        return F.scaled_dot_product_attention(q, k_rep, v_rep, is_causal=True)

    want = sdpa_rep()[0].transpose(0, 1)  # (n, heads, d)
    err = (launch_prefill(*args).float() - want.float()).abs().max().item()
    flops = 4 * HEADS * HEAD_DIM * n * (n + 1) / 2  # causal: QK^T and PV over the lower triangle
    sdpa_ms = {name: do_bench(fn) for name, fn in (("sdpa enable_gqa", sdpa_gqa), ("sdpa K/V repeated", sdpa_rep))}
    best_sdpa = min(sdpa_ms.values())
    out(
        f"causal prefill of {n} tokens, {HEADS}/{KV_HEADS} heads, head dim {HEAD_DIM}, bf16, block {BLOCK}; "
        f"max |err| vs SDPA {err:.2e}"
    )
    for name, ms in sdpa_ms.items():
        out(f"  {name:49s} {ms * 1e3:8.1f} us  {flops / ms / 1e9:6.1f} TFLOP/s")
    configs = [None, (128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3), (128, 32, 4, 3), (64, 128, 8, 2)]
    for cfg in configs:
        kw = {} if cfg is None else dict(block_m=cfg[0], block_n=cfg[1], num_warps=cfg[2], num_stages=cfg[3])
        label = "default" if cfg is None else f"block_m={cfg[0]} block_n={cfg[1]} warps={cfg[2]} stages={cfg[3]}"
        ms = bench_or_none(out, label, lambda: launch_prefill(*args, **kw))
        if ms is None:
            continue
        out(
            f"  triton {label:42s} {ms * 1e3:8.1f} us  {flops / ms / 1e9:6.1f} TFLOP/s  "
            f"{best_sdpa / ms:4.2f}x SDPA" + ("   (goal >= 0.5x)" if cfg is None else "")
        )


def store(out: Report, bw_star: float) -> None:
    import torch
    from triton.testing import do_bench

    from pykv_kernels import reference
    from pykv_kernels.store_kv import store_kv

    for tokens in STORE_TOKENS:
        num_blocks = 2 * tokens // BLOCK
        cache = torch.zeros(2, num_blocks, BLOCK, KV_HEADS, HEAD_DIM, dtype=torch.bfloat16, device=DEVICE)
        key = torch.randn(tokens, KV_HEADS, HEAD_DIM, dtype=torch.bfloat16, device=DEVICE)
        value = torch.randn_like(key)
        slots = torch.randperm(num_blocks * BLOCK, device=DEVICE)[:tokens]
        args = (key, value, cache[0], cache[1], slots)
        moved = 2 * 2 * key.numel() * 2  # K and V, read and written
        for name, fn in (("triton", store_kv), ("torch index_copy_", reference.store_kv)):
            ms = do_bench(lambda fn=fn: fn(*args))
            bw = gbps(moved, ms)
            out(
                f"  store {tokens:6d} tokens {name:18s} {ms * 1e3:8.1f} us  {bw:7.0f} GB/s  "
                f"{100 * bw / bw_star:5.1f}% of BW*"
            )


def host_copies(out: Report) -> None:
    import torch

    def timed(dst, src, reps: int) -> float:
        non_blocking = src.is_pinned() or dst.is_pinned()
        dst.copy_(src, non_blocking=non_blocking)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            dst.copy_(src, non_blocking=non_blocking)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / reps

    for nbytes, reps, label in ((256 << 20, 10, "256 MiB"), (64 << 10, 200, "64 KiB (about one KV block)")):
        dev = torch.empty(nbytes, dtype=torch.uint8, device=DEVICE)
        for pinned in (True, False):
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
            h2d, d2h = timed(dev, host, reps), timed(host, dev, reps)
            kind = "pinned  " if pinned else "pageable"
            out(f"  {label:28s} {kind}  H2D {gbps(nbytes, h2d):6.1f} GB/s   D2H {gbps(nbytes, d2h):6.1f} GB/s")


def playground(out: Report) -> None:
    """The Playground's default workload (storm preset, default config, shipped model) end to end, as the
    lab runs it (``attention_backend="auto"``, a stepwise engine: compiled Triton on CUDA), beside torch."""
    import statistics

    from pykv.engine.model.loader import load_model
    from pykv.lab.lab import Lab, lab_config

    loaded = load_model("tiny", DEVICE)
    runs = {}
    for backend in ("auto", "torch"):
        lab = Lab(lab_config(model="tiny", device=DEVICE, attention_backend=backend), loaded, "storm")
        while lab.step() and (PLAYGROUND_STEPS is None or lab.head < PLAYGROUND_STEPS):
            pass
        ms = sorted(1e3 * snap.report.step_time_s for snap in lab.snapshots[1:])
        label = lab.engine.backend.label
        runs[backend] = {r.request_id: r.output_token_ids for r in lab.view.requests}
        out(
            f"  {label:28s} {len(ms):4d} steps  median {statistics.median(ms):7.2f} ms  "
            f"p95 {ms[min(len(ms) - 1, int(0.95 * len(ms)))]:7.2f} ms  max {ms[-1]:7.2f} ms"
        )
    out(f"  tokens identical to torch: {runs['auto'] == runs['torch']}")


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print(
            "bench/gpu_check.py needs a CUDA GPU and this machine has none (torch.cuda.is_available() is False).\n"
            "Run it on a CUDA machine. Without one, check the kernels through Triton's interpreter with\n"
            "`python -m pytest tests/test_kernels_*.py` and `python -m bench.bench_kernels --quick`.",
            file=sys.stderr,
        )
        return 2
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        print("TRITON_INTERPRET is set: unset it so the kernels compile for the GPU.", file=sys.stderr)
        return 2
    import triton

    import pykv_kernels.triton_utils

    assert not pykv_kernels.triton_utils.interpreted(), "kernels are interpreted; unset TRITON_INTERPRET"
    gpu = torch.cuda.get_device_name()
    today = datetime.date.today().isoformat()
    out = Report()
    out(f"pykv GPU check, {today}, {gpu} (measured on this GPU)")
    out(
        f"torch {torch.__version__} (CUDA {torch.version.cuda}), triton {triton.__version__}, "
        f"python {platform.python_version()}, {torch.cuda.get_device_properties(0).multi_processor_count} SMs"
    )
    out.section("kernel tests (compiled on CUDA)", run_tests)
    bw = {}
    out.section("BW*: copy bandwidth reference", lambda o: bw.setdefault("v", copy_bandwidth(o)))
    bw_star = bw.get("v", float("nan"))
    out.section("paged decode", decode, bw_star)
    out.section("paged decode, split-K", split_k, bw_star)
    out.section("paged prefill vs torch SDPA", prefill)
    out.section("KV store", store, bw_star)
    out.section("host <-> device copies (pinned vs pageable)", host_copies)
    out.section("Playground default workload, end to end (compiled Triton vs torch)", playground)
    import gpu_model_check  # bench/gpu_model_check.py, beside this file

    out.section("GPU cost model: measured steps vs predicted (pykv.gpu_model)", gpu_model_check.steps)
    out.section("GPU cost model: measured copies vs the link model", gpu_model_check.copies)

    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{today}-{re.sub(r'[^A-Za-z0-9]+', '-', gpu).strip('-')}.txt"
    path.write_text("\n".join(out.lines) + "\n")
    print(f"\nwrote {path.relative_to(ROOT)}; commit it.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
