"""The cost model in words, for the UI's expander and the CLI: the formulas, the target's figures and
the calibration table (every row with its source)."""

from __future__ import annotations

from pykv.gpu_model.calibration import calibration_rows
from pykv.gpu_model.estimate import Estimate

FORMULAS = """\
Per step, on each of the `tp` GPUs (M tokens over S sequences; a chunk is n new tokens after s cached):

- **linear** = max(compute, memory): compute = (2 × layer params × M + 2 × LM-head params × S) / (peak × GEMM
  efficiency × M / (M + M0)), memory = (layer + LM-head params) × weight bytes / (bandwidth × memory efficiency)
- **attention**, per chunk = max(4 × layers × heads × head_dim × (n·s + n(n+1)/2) / (16-bit peak × attention
  efficiency), layers × 2 × KV heads × head_dim × KV bytes × (s + n) / (bandwidth × memory efficiency))
- **overhead** = step overhead + layers × layer overhead
- **tensor parallel** = 2 × layers × (all-reduce latency + 2(tp−1)/tp × M × hidden × 2 bytes / (link × link efficiency))
- **copies** (swap, offload) = bytes / host-link bandwidth (per direction, pinned or pageable) + copies × per-copy
  overhead; a swap moves whole blocks (blocks × block size × KV bytes per token, however few of a block's slots
  hold tokens, as V0's `swap_blocks` does); per-block copies issue one per block, layer and K/V
- **step** = linear + attention + overhead + tensor parallel + copies. The modelled clock adds up the steps.
"""


def target_facts(est: Estimate) -> list[tuple[str, str]]:
    """(what, value) rows describing the target, for a table."""
    g, s = est.gpu, est.shape
    peak = {"bf16": "16bit", "fp16": "16bit"}.get(est.dtype, est.dtype)
    return [
        (
            "GPU",
            f"{g.label}: {g.tflops[peak]:g} TFLOP/s dense {est.dtype}, {g.memory_gbps:,.0f} GB/s, "
            f"{g.memory_gb:g} GB, {est.link.name}, {g.interconnect}",
        ),
        ("GPU source", g.source),
        (
            "model",
            f"{s.name}: {s.layers} layers, hidden {s.hidden}, {s.heads} heads / {s.kv_heads} KV heads x "
            f"{s.head_dim}, {'SwiGLU' if s.mlp == 'gated' else 'MLP'} {s.ffn}, vocab {s.vocab:,}; "
            f"{s.total_params / 1e9:.2f} B parameters",
        ),
        (
            "KV per token",
            f"{est.kv_bytes_per_token:,} bytes ({est.kv_dtype}); {est.kv_bytes_per_token_per_gpu:,} "
            f"per GPU at TP{est.tp}",
        ),
        ("weights per GPU", f"{est.weight_bytes_per_gpu / 1e9:.1f} GB ({est.dtype})"),
        (
            "host link",
            f"{est.link.name}: pinned H2D {est.link.h2d_gbps:g} GB/s, D2H {est.link.d2h_gbps:g} GB/s "
            f"({est.link.source})",
        ),
        ("linear phase turns compute-bound at", f"{est.linear_switch_tokens:,.0f} tokens per step"),
    ]


def calibration_markdown() -> str:
    rows = ["| entry | value | source |", "|---|---:|---|"]
    rows += [f"| `{name}` | {value:g} | {source} |" for name, value, source in calibration_rows()]
    return "\n".join(rows)
