"""The three Triton launchers that make up the engine's ``"triton"`` attention backend.

Importing this imports ``triton`` (an ``ImportError`` where it is not installed) through
``pykv_kernels.triton_utils``, which first switches the interpreter on where there is no CUDA, and defines
the kernels: compiled for CUDA, or interpreted on CPU.
"""

from __future__ import annotations

from pykv_kernels.paged_decode import paged_decode_attention
from pykv_kernels.paged_prefill import paged_prefill_attention
from pykv_kernels.store_kv import store_kv
from pykv_kernels.triton_utils import interpreted

__all__ = ["interpreted", "paged_decode_attention", "paged_prefill_attention", "store_kv"]
