"""Attention kernels over pykv's paged KV cache, each beside the torch reference it must match.

Why this file switches Triton's interpreter on
----------------------------------------------
``@triton.jit`` decides, when it decorates a kernel (i.e. when the kernel's module is imported),
whether the kernel is compiled for the GPU or run by Triton's CPU interpreter; it decides from the
environment variable ``TRITON_INTERPRET`` (older Triton releases read it once, at ``import
triton``). A kernel defined in compiled mode cannot run on CPU tensors later. So the variable must
be set *before* ``triton`` is imported and before any kernel module is imported.

Every kernel module lives in this package, and Python always runs a package's ``__init__`` before
any of its modules, so setting the variable here (and ``pykv`` imports ``kernels`` before anything
touches triton) covers every path: the engine, the tests, the benchmarks and ``python -m
kernels.<kernel>``. On a machine with CUDA nothing changes; without CUDA the interpreter is switched
on unless the user set ``TRITON_INTERPRET`` explicitly (their choice wins). Cost at import: one
environment lookup and ``torch.cuda.is_available()``, no triton import.
"""

from __future__ import annotations

import os

import torch


def _enable_interpreter_without_cuda() -> None:
    if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


_enable_interpreter_without_cuda()
