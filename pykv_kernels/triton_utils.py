"""The kernels' way into Triton: ``triton`` and ``tl`` (imported only after the interpreter switch),
small ``@triton.jit`` helpers shared by the kernels, and how the kernels run in this process.

Every kernel module takes ``triton`` and ``tl`` from here (``from pykv_kernels.triton_utils import tl,
triton``) instead of importing triton itself, so the switch below always runs first.
"""

from __future__ import annotations

import torch

from pykv_kernels.launch_utils import use_interpreter_without_cuda

# Before `import triton`: `@triton.jit` picks compiled or interpreted from TRITON_INTERPRET (older
# Triton: once, at import), and this is the one place the kernels import triton. Switching here,
# not when `pykv_kernels` is imported, leaves processes that never choose the Triton backend alone.
use_interpreter_without_cuda()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

__all__ = ["MAX_COMBINE", "SUM_COMBINE", "dot_operand", "interpreted", "native_dot", "tl", "triton"]

# ``tl.reduce(x, axis, MAX_COMBINE)`` is ``tl.max(x, axis)`` for fp32 ``x`` (likewise SUM_COMBINE and tl.sum) minus
# the @jit wrapper: under the interpreter every call of a @jit function re-patches triton.language (~2 ms), and the
# interpreter maps exactly these two combine functions onto numpy. Compiled, both spellings are the same.
MAX_COMBINE = tl.standard._elementwise_max
SUM_COMBINE = tl.standard._sum_combine


@triton.jit
def dot_operand(x, NATIVE_DOT: tl.constexpr):
    """A freshly loaded tile, as it should enter ``tl.dot``.

    On a GPU, 16-bit K/V/Q go to the tensor cores as they are (``tl.dot`` accumulates in fp32).
    Everywhere else, and always under the interpreter (which stores bf16 as raw uint16 and so
    computes bf16 arithmetic wrong), the tile is widened to fp32 right after its load.
    """
    if NATIVE_DOT:
        return x
    else:
        return x.to(tl.float32)


def interpreted() -> bool:
    """True when this process runs the kernels through Triton's CPU interpreter."""
    return not isinstance(dot_operand, JITFunction)


def native_dot(query: torch.Tensor, cache: torch.Tensor) -> bool:
    """Whether the kernels may feed ``tl.dot`` 16-bit operands (compiled on a GPU, same dtype)."""
    return (
        not interpreted()
        and query.device.type == "cuda"
        and query.dtype == cache.dtype
        and query.dtype in (torch.float16, torch.bfloat16)
    )
