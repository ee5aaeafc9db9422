"""The GPUs a schedule can be priced on: spec-sheet figures, each with its source.

TFLOP/s are dense (no 2:4 sparsity), tensor-core figures for 16-bit and fp8 with fp32 accumulation
(what LLM GEMMs use); fp32 is the plain CUDA-core rate (PyTorch's default for fp32 matmuls, TF32 off).
GB/s are 1e9 bytes per second. ``interconnect_gbps`` is one direction of one GPU's link to its peers
(what a ring all-reduce's bus bandwidth is bounded by).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    name: str  # the catalogue name (case-insensitive on input)
    label: str
    memory_gb: float  # HBM / GDDR capacity
    memory_gbps: float  # peak memory bandwidth
    tflops: dict[str, float]  # dense peak by math dtype: "16bit", "fp8", "fp32"
    host_link: str  # a key of pykv.border.pcie.LINKS
    interconnect: str  # what links the GPUs of a tensor-parallel group
    interconnect_gbps: float  # per GPU, one direction
    match: tuple[str, ...]  # words that all appear in torch.cuda.get_device_name() (lowercased)
    source: str


GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        GpuSpec(
            "A100-80GB-SXM",
            "NVIDIA A100 80GB SXM",
            80,
            2039,
            {"16bit": 312, "fp32": 19.5},
            "gen4",
            "NVLink 3 (600 GB/s per GPU, both directions)",
            300,
            ("a100", "80gb"),
            "NVIDIA A100 datasheet (2021): 312 TFLOP/s dense FP16/BF16 tensor, 19.5 FP32, 2,039 GB/s HBM2e, "
            "PCIe Gen4, NVLink 600 GB/s",
        ),
        GpuSpec(
            "A100-40GB-SXM",
            "NVIDIA A100 40GB SXM",
            40,
            1555,
            {"16bit": 312, "fp32": 19.5},
            "gen4",
            "NVLink 3 (600 GB/s per GPU, both directions)",
            300,
            ("a100",),
            "NVIDIA A100 datasheet (2021): 312 TFLOP/s dense FP16/BF16, 1,555 GB/s HBM2, PCIe Gen4, NVLink 600 GB/s",
        ),
        GpuSpec(
            "H100-SXM",
            "NVIDIA H100 SXM5 80GB",
            80,
            3350,
            {"16bit": 989, "fp8": 1979, "fp32": 67},
            "gen5",
            "NVLink 4 (900 GB/s per GPU, both directions)",
            450,
            ("h100",),
            "NVIDIA H100 datasheet: 989 TFLOP/s dense BF16/FP16 (1,979 sparse), 1,979 dense FP8, 67 FP32, "
            "3.35 TB/s HBM3, PCIe Gen5, NVLink 900 GB/s",
        ),
        GpuSpec(
            "H200",
            "NVIDIA H200 SXM 141GB",
            141,
            4800,
            {"16bit": 989, "fp8": 1979, "fp32": 67},
            "gen5",
            "NVLink 4 (900 GB/s per GPU, both directions)",
            450,
            ("h200",),
            "NVIDIA H200 datasheet: H100's compute (989 dense BF16, 1,979 dense FP8), 141 GB HBM3e at 4.8 TB/s, "
            "PCIe Gen5, NVLink 900 GB/s",
        ),
        GpuSpec(
            "L4",
            "NVIDIA L4 24GB",
            24,
            300,
            {"16bit": 121, "fp8": 242, "fp32": 30.3},
            "gen4",
            "PCIe Gen4 (no NVLink)",
            25.5,
            ("l4",),
            "NVIDIA L4 datasheet: 242 TFLOP/s BF16 and 485 FP8 with sparsity (121 / 242 dense), 30.3 FP32, "
            "300 GB/s GDDR6, PCIe Gen4 x16",
        ),
        GpuSpec(
            "L40S",
            "NVIDIA L40S 48GB",
            48,
            864,
            {"16bit": 362, "fp8": 733, "fp32": 91.6},
            "gen4",
            "PCIe Gen4 (no NVLink)",
            25.5,
            ("l40s",),
            "NVIDIA L40S datasheet: 362 TFLOP/s dense BF16 (733 sparse), 733 dense FP8, 91.6 FP32, 864 GB/s, "
            "PCIe Gen4 x16",
        ),
        GpuSpec(
            "RTX-4090",
            "NVIDIA GeForce RTX 4090 24GB",
            24,
            1008,
            {"16bit": 165.2, "fp8": 165.2, "fp32": 82.6},
            "gen4",
            "PCIe Gen4 (no NVLink; peer-to-peer off)",
            25.5,
            ("4090",),
            "NVIDIA Ada GPU architecture whitepaper (RTX 4090): 165.2 TFLOP/s dense FP16/BF16 and FP8 tensor with "
            "FP32 accumulate (330 / 660 with FP16 accumulate), 82.6 FP32, 1,008 GB/s GDDR6X, PCIe Gen4 x16",
        ),
    )
}


def _known() -> str:
    return ", ".join(GPUS)


def find_gpu(name: str) -> GpuSpec:
    """The catalogue entry named ``name`` (case-insensitive); ValueError listing the known ones."""
    if isinstance(name, GpuSpec):
        return name
    by_lower = {k.lower(): v for k, v in GPUS.items()}
    if not isinstance(name, str) or name.strip().lower() not in by_lower:
        raise ValueError(f"Unknown GPU {name!r}; choose one of: {_known()}.")
    return by_lower[name.strip().lower()]


def detect_gpu(device_name: str) -> GpuSpec | None:
    """The catalogue entry for a CUDA device name (``torch.cuda.get_device_name()``), or None. The most
    specific entry wins (A100 80GB before A100)."""
    words = set(re.split(r"[^a-z0-9]+", device_name.lower()))  # "NVIDIA A100-SXM4-80GB" -> a100, sxm4, 80gb
    hits = [g for g in GPUS.values() if all(m in words for m in g.match)]
    return max(hits, key=lambda g: len(g.match), default=None)
