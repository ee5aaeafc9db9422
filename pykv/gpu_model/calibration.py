"""The calibration table: the few efficiencies and overheads that turn spec-sheet peaks into step times.

One table for every GPU and model (nothing is tuned per view or per target). The entries marked
"fitted" were fitted once, by ``python -m bench.gpu_model_validation --fit`` (a Nelder-Mead search on
the log error), to the TensorRT-LLM and LMDeploy points listed in ``pykv/gpu_model/published.py``;
the others come from published measurements named beside them. (A softer roofline corner,
(compute^p + memory^p)^(1/p), was tried and fitted no better than the plain max: p = 1.5, 3, 6 and 20
gave worst errors of 1.58x, 1.55x, 1.52x and 1.52x.) ``bench/gpu_model_validation.py``
prints every point's prediction and error with this table.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Calibration:
    # Share of the dense peak a large GEMM reaches. 16-bit: cuBLAS reaches ~70-80% of peak on large LLM GEMMs
    # (NVIDIA's "Matrix multiplication background" guide); fp8 less (fitted).
    gemm_efficiency_16bit: float = 0.72
    gemm_efficiency_fp8: float = 0.54  # fitted
    # A GEMM of few rows (tokens) has too few output tiles to fill every SM: efficiency x M / (M + this).
    gemm_half_tokens: float = 114.0  # fitted
    # FlashAttention-2 reaches 50-73% of A100 peak in the forward pass (Dao 2023, Fig. 5); 0.5 as a round low end.
    attention_efficiency: float = 0.5
    # Share of peak HBM bandwidth a streaming kernel reaches: ~85% (a device-to-device copy reaches ~1.7-1.8 of
    # the A100-80GB's 2.04 TB/s and ~2.8-3.0 of the H100's 3.35 TB/s; bench/gpu_check.py measures it as BW*).
    memory_efficiency: float = 0.85
    # Fixed costs: per step (scheduling, input preparation, sampling) and per layer (kernel launches).
    step_overhead_us: float = 0.0  # fitted (to ~0: these runtimes' step cost is per layer)
    layer_overhead_us: float = 106.0  # fitted
    # Tensor parallel: two all-reduces per layer (after attention and after the MLP), ring algorithm:
    # 2 (tp - 1) / tp x bytes over the interconnect at this share of it (nccl-tests all_reduce_perf bus
    # bandwidth ~230 of 300 GB/s per direction on A100 NVLink), plus a fixed latency per call (~10-20 µs).
    interconnect_efficiency: float = 0.77
    allreduce_latency_us: float = 15.0


CALIBRATION = Calibration()

SOURCES = {
    "gemm_efficiency_16bit": "cuBLAS on large GEMMs: 70-80% of dense peak (NVIDIA Deep Learning Performance guide)",
    "gemm_efficiency_fp8": "fitted to TensorRT-LLM H100 FP8 first-token latencies (bench/gpu_model_validation.py)",
    "gemm_half_tokens": "fitted: tokens per step at which the weight GEMMs reach half their efficiency",
    "attention_efficiency": "FlashAttention-2 forward: 50-73% of A100 peak (Dao, 2023, Fig. 5)",
    "memory_efficiency": "device-to-device copies reach ~85% of peak HBM bandwidth on A100/H100 (BW* in "
    "bench/gpu_check.py)",
    "step_overhead_us": "fitted: scheduling, input preparation and sampling per step",
    "layer_overhead_us": "fitted: kernel launches per layer (about ten kernels of a few µs each)",
    "interconnect_efficiency": "nccl-tests all_reduce_perf bus bandwidth ~230 of 300 GB/s per direction (A100 NVLink)",
    "allreduce_latency_us": "NCCL all-reduce latency for small messages within a node: ~10-20 µs",
}


def calibration_rows(calibration: Calibration = CALIBRATION) -> list[tuple[str, float, str]]:
    """(name, value, source) for every entry: the table the UI and the manual show."""
    return [(f.name, getattr(calibration, f.name), SOURCES[f.name]) for f in fields(calibration)]
