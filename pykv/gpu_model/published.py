"""Published measurements the cost model is checked against (``bench/gpu_model_validation.py``), each
with its source, and what the model predicts for it. Fixed-shape points only: batch and lengths exact.

Kinds: ``prefill`` (first-token latency at batch 1: one prefill step), ``decode`` (median time per output
token: one decode step at the median context, ``input + output / 2``; where the engine's KV pool cannot
hold the whole batch, the batch it can hold), ``copy_gbps`` (one large copy's bandwidth), ``copy_us``
(one small copy), ``swap`` (a victim's KV out and back in), ``recompute`` (its re-prefill).
"""

from __future__ import annotations

from dataclasses import dataclass

from pykv.gpu_model.estimate import Estimate, estimate

SOURCES = {
    "trtllm": "TensorRT-LLM docs/source/performance.md, 'Low Latency' tables, batch 1 first-token latency "
    "(v0.7-v0.9 figures as quoted in issue 18)",
    "trtllm-0.5": "TensorRT-LLM docs/source/performance.md at release v0.5 'Low Latency' tables (NVIDIA/TensorRT-LLM "
    "commit 77d24b5)",
    "lmdeploy": "LMDeploy docs/en/benchmark/a100_fp16.md, static inference benchmark, lmdeploy v0.1.0a1 on "
    "A100-80G: FTL(ave) and the 50% per-token latency (InternLM/lmdeploy)",
    "nim": "NVIDIA NIM LLM benchmarking docs (docs.nvidia.com/nim/benchmarking/llm, 'Performance'), "
    "Llama-3.3-70b-instruct NIM 1.8.0 on 2 x H100 80G, fp8, TP2, concurrency 1 (held out: not fitted)",
    "links": "host<->device copy measurements (pykv/border/pcie.py LINKS: the link model's own inputs)",
    "vllm-paper": "Kwon et al., 'Efficient Memory Management for LLM Serving with PagedAttention', SOSP 2023, "
    "Fig. 19(a): OPT-13B, 256 tokens (209.7 MB of KV), A100-40GB, one copy per block",
}


@dataclass(frozen=True)
class Point:
    source: str  # a key of SOURCES
    kind: str  # prefill | decode | copy_gbps | copy_us | swap | recompute
    gpu: str
    model: str
    published: float  # ms (GB/s for copy_gbps, µs for copy_us)
    dtype: str = "fp16"
    tp: int = 1
    kv_dtype: str | None = None
    tokens: int = 0  # prefill / recompute / swap: the sequence's tokens
    batch: int = 1
    context: int = 0  # decode: tokens already in each sequence's cache
    kv_pool_gb: float | None = None  # decode: the engine's KV pool per GPU, where it caps the batch
    direction: str = "h2d"
    pinned: bool = True
    block_size: int = 16  # swap: copies are per block
    note: str = ""
    fitted: bool = False  # the calibration was fitted to this point
    input: bool = False  # the figure is itself an input of the model (a link measurement)

    @property
    def unit(self) -> str:
        return {"copy_gbps": "GB/s", "copy_us": "µs"}.get(self.kind, "ms")


def _ttft(src, gpu, model, isl, ms, fitted=True, **kw) -> Point:
    return Point(
        src, "prefill", gpu, model, ms, tokens=isl, note=f"first token, ISL {isl}, batch 1", fitted=fitted, **kw
    )


def _tpot(src, gpu, model, batch, isl, osl, ms, fitted=True, **kw) -> Point:
    return Point(
        src,
        "decode",
        gpu,
        model,
        ms,
        batch=batch,
        context=isl + osl // 2,
        note=f"per token p50, batch {batch}, {isl}/{osl}",
        fitted=fitted,
        **kw,
    )


A100, A100_40, H100, L40S = "A100-80GB-SXM", "A100-40GB-SXM", "H100-SXM", "L40S"
L2_7, L2_13, L2_70, L31_70 = "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-70b"
LMD_7B_POOL = 78.4 - 13.5  # mem(GB) column of the batch-64 rows minus the fp16 weights: the KV pool it had
FP8 = dict(dtype="fp8", kv_dtype="fp8")  # TensorRT-LLM's FP8 builds: --enable_fp8 --fp8_kv_cache

POINTS: tuple[Point, ...] = (
    _ttft("trtllm", A100, L2_7, 128, 16.2),
    _ttft("trtllm", A100, L2_7, 2048, 132.4),
    _ttft("trtllm", A100, L2_70, 128, 45.6, tp=4),
    _ttft("trtllm", A100, L2_70, 2048, 249.2, tp=8),
    _ttft("trtllm", H100, L2_7, 128, 6.3, **FP8),
    _ttft("trtllm", H100, L2_7, 2048, 30.8, **FP8),
    _ttft("trtllm", H100, L2_70, 128, 26.0, tp=4, **FP8),
    _ttft("trtllm", H100, L2_70, 2048, 109.0, tp=4, **FP8),
    _ttft("trtllm-0.5", A100, L2_70, 2048, 377.0, tp=4),
    _ttft("trtllm-0.5", L40S, L2_7, 128, 14.0, **FP8),
    _ttft("trtllm-0.5", L40S, L2_7, 2048, 73.0, **FP8),
    _ttft("lmdeploy", A100, L2_7, 128, 22.0),
    _ttft("lmdeploy", A100, L2_7, 2048, 139.0),
    _ttft("lmdeploy", A100, L2_13, 128, 40.0),
    _ttft("lmdeploy", A100, L2_13, 2048, 242.0),
    _ttft("lmdeploy", A100, L2_70, 128, 74.0, tp=4),
    _ttft("lmdeploy", A100, L2_70, 2048, 402.0, tp=4),
    _tpot("lmdeploy", A100, L2_7, 1, 128, 128, 10.0),
    _tpot("lmdeploy", A100, L2_7, 1, 2048, 2048, 11.0),
    _tpot("lmdeploy", A100, L2_7, 16, 128, 128, 11.0),
    _tpot("lmdeploy", A100, L2_7, 16, 128, 2048, 15.0),
    _tpot("lmdeploy", A100, L2_7, 16, 2048, 2048, 25.0),
    _tpot("lmdeploy", A100, L2_7, 32, 128, 2048, 21.0),
    _tpot("lmdeploy", A100, L2_7, 64, 128, 128, 14.0),
    _tpot("lmdeploy", A100, L2_7, 64, 128, 2048, 30.0, kv_pool_gb=LMD_7B_POOL),
    _tpot("lmdeploy", A100, L2_7, 64, 2048, 2048, 47.0, kv_pool_gb=LMD_7B_POOL),
    _tpot("lmdeploy", A100, L2_13, 1, 128, 128, 17.0),
    _tpot("lmdeploy", A100, L2_13, 64, 128, 128, 24.0),
    _tpot("lmdeploy", A100, L2_70, 1, 128, 128, 29.0, tp=4),
    _tpot("lmdeploy", A100, L2_70, 64, 128, 2048, 43.0, tp=4),
    _ttft("nim", H100, L31_70, 5000, 406.77, fitted=False, dtype="fp8", tp=2),
    _ttft("nim", H100, L31_70, 500, 47.77, fitted=False, dtype="fp8", tp=2),
    _tpot("nim", H100, L31_70, 1, 5000, 500, 18.58, fitted=False, dtype="fp8", tp=2),
    _tpot("nim", H100, L31_70, 1, 500, 2000, 18.91, fitted=False, dtype="fp8", tp=2),
    Point("links", "copy_gbps", A100, L2_7, 25.5, note="pinned H2D, PCIe Gen4 (25-26 GB/s)", input=True),
    Point("links", "copy_gbps", H100, L2_7, 35.0, note="pinned H2D, PCIe Gen5", input=True),
    Point("links", "copy_gbps", H100, L2_7, 53.0, direction="d2h", note="pinned D2H, PCIe Gen5", input=True),
    Point("links", "copy_us", A100, L2_7, 3.0, note="one small copy (2-4 µs)", input=True),
    Point(
        "vllm-paper",
        "swap",
        A100_40,
        "opt-13b",
        135.0,
        tokens=256,
        block_size=1,
        note="swap out + in, block size 1 (20,480 copies each way)",
    ),
    Point("vllm-paper", "recompute", A100_40, "opt-13b", 30.0, tokens=256, note="re-prefill of 256 tokens (20-40 ms)"),
)


def target(point: Point, calibration=None) -> Estimate:
    kw = {} if calibration is None else {"calibration": calibration}
    return estimate(point.gpu, point.model, point.dtype, point.tp, point.kv_dtype, **kw)


def predict(point: Point, calibration=None) -> float:
    """The model's figure for ``point``, in the point's unit."""
    est = target(point, calibration)
    if point.kind == "prefill" or point.kind == "recompute":
        return est.prefill_ms(point.tokens, point.batch)
    if point.kind == "decode":
        batch = point.batch
        if point.kv_pool_gb is not None:  # the sequences the pool holds at the median context
            held = int(point.kv_pool_gb * 1e9 // (est.kv_bytes_per_token_per_gpu * point.context))
            batch = max(1, min(batch, held))
        return est.decode_step_ms(batch, point.context)
    if point.kind == "copy_gbps":
        size = 256 << 20
        return size / (est.copy_ms(size, point.direction, point.pinned) * 1e-3) / 1e9
    if point.kind == "copy_us":
        return est.copy_ms(0, point.direction, point.pinned) * 1e3
    if point.kind == "swap":
        blocks = -(-point.tokens // point.block_size)
        tokens = blocks * point.block_size
        return sum(est.kv_copy_ms(tokens, d, blocks, per_block=True) for d in ("d2h", "h2d"))
    raise ValueError(f"Unknown point kind {point.kind!r}.")
