"""What ``python -m kernels.<kernel>`` does, shared by every kernel file's ``__main__`` block.

A kernel names its case, a function of the :class:`Target` that returns a :class:`KernelCase`;
:func:`run_main` does the rest::

    target = cuda (bf16, real shapes) if available, else cpu (fp32, tiny shapes, Triton's interpreter)
    case   = make_case(target)
    want   = case.torch()
    for each Triton configuration in case.checks:   assert max |triton - torch| <= case.tol
    for triton, torch:  time with bench_ms, print us and case.work per second

Torch only: the kernel module that calls this has already imported triton through
``pykv_kernels.triton_utils``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import torch
from torch import Tensor

from pykv_kernels.launch_utils import bench_ms, default_device

T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """Where ``__main__`` runs: CUDA when available, else the CPU through Triton's interpreter."""

    device: str
    big: bool  # real shapes on CUDA; tiny ones on CPU, where the interpreter is ~1000x slower than torch
    dtype: torch.dtype  # bf16 on CUDA; fp32 on CPU (the interpreter computes bf16 arithmetic wrong)

    def pick(self, big: T, tiny: T) -> T:
        return big if self.big else tiny


@dataclass(frozen=True)
class KernelCase:
    """One kernel's correctness check and benchmark, on inputs already built for the target."""

    name: str  # the kernel, as printed: "paged_decode"
    shapes: str  # what the inputs are, as printed: "3 requests, block_size 5"
    triton: Callable[[], torch.Tensor]  # the kernel's public launcher; returns what to compare
    torch: Callable[[], Tensor]  # the reference on the same inputs (from here on `torch` names this field)
    tol: float  # largest max |triton - torch| accepted; 0.0 means bit-exact
    work: float  # what one call does, in the numerator of `unit`: GB moved, TFLOP computed
    unit: str  # the rate's unit, as printed: "GB/s", "TFLOP/s"
    checks: dict[str, Callable[[], Tensor]] = field(default_factory=dict)  # other configurations to check

    def configurations(self) -> dict[str, Callable[[], Tensor]]:
        return self.checks or {"triton": self.triton}


def max_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want|; NaN must sit exactly where the reference has NaN (untouched cache slots), else inf."""
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return math.inf
    if got.numel() == 0:
        return 0.0
    return (got.float() - want.float()).nan_to_num(0.0).abs().max().item()


def main_target() -> Target:
    device = default_device()
    if device == "cpu":
        torch.set_num_threads(1)  # tiny shapes: threads only add noise to the torch timings
    big = device == "cuda"
    return Target(device, big, torch.bfloat16 if big else torch.float32)


def run_main(make_case: Callable[[Target], KernelCase]) -> None:
    """Check the kernel against its reference (raises ``AssertionError`` on a mismatch), then time both."""
    target = main_target()
    case = make_case(target)
    print(f"{case.name} on {target.device}, {str(target.dtype).removeprefix('torch.')}: {case.shapes}")
    want = case.torch()
    for label, fn in case.configurations().items():
        err = max_error(fn(), want)
        assert err <= case.tol, f"{case.name} ({label}) does not match the reference: {err:.2e} > {case.tol:.0e}"
        print(f"  {label}: matches the reference, max |triton - torch| = {err:.2e}")
    for label, fn in (("triton", case.triton), ("torch", case.torch)):
        ms = bench_ms(fn, target.device)
        print(f"  {label:>7}: {ms * 1e3:10.1f} us  {case.work / (ms * 1e-3):9.3g} {case.unit}")
