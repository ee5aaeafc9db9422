"""Checks and small helpers shared by the kernel launchers, and the door into Triton's interpreter.

Torch only: importing this never imports triton.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def use_interpreter_without_cuda() -> None:
    """The door into Triton: on a machine without CUDA, have ``@triton.jit`` build interpreted kernels.

    Sets ``TRITON_INTERPRET=1`` unless the user set the variable (their choice wins) or CUDA is
    available (nothing changes). It must run before ``import triton`` (see ``pykv_kernels/__init__.py``),
    so ``pykv_kernels.triton_utils`` calls it above its own ``import triton`` and every kernel module takes
    ``triton`` and ``tl`` from there. Idempotent; costs an environment lookup and a CUDA query. RuntimeError
    when triton was already imported without the interpreter (it cannot be switched on afterwards).
    """
    if "TRITON_INTERPRET" in os.environ or torch.cuda.is_available():
        return
    if "triton" in sys.modules:  # too late: triton.language was built in compiled mode and cannot interpret
        raise RuntimeError(
            "triton was imported before Triton's interpreter could be switched on (torch._dynamo, which "
            "transformers and torch.compile import, imports it); start the process with TRITON_INTERPRET=1 to run "
            "the kernels on this CPU"
        )
    os.environ["TRITON_INTERPRET"] = "1"


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def check_float_dtype(t: torch.Tensor, name: str) -> None:
    assert t.dtype in FLOAT_DTYPES, f"{name} must be float32, float16 or bfloat16; got {t.dtype}"


def check_cache(k_cache: torch.Tensor, v_cache: torch.Tensor) -> None:
    """K and V caches: (num_blocks, block_size, num_kv_heads, head_dim), same shape, dtype and strides.

    They may be views into a bigger pool (``gpu_cache[layer, 0]``): only the innermost dim must be
    contiguous-friendly, every stride is passed to the kernels.
    """
    assert k_cache.dim() == 4, (
        f"k_cache must be (num_blocks, block_size, num_kv_heads, head_dim); got {tuple(k_cache.shape)}"
    )
    assert k_cache.shape == v_cache.shape, f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} differ"
    assert k_cache.stride() == v_cache.stride(), "k_cache and v_cache must have the same strides"
    assert k_cache.dtype == v_cache.dtype, f"k_cache is {k_cache.dtype} but v_cache is {v_cache.dtype}"
    check_float_dtype(k_cache, "k_cache")
    assert k_cache.device == v_cache.device, "k_cache and v_cache must be on the same device"


def check_attention_inputs(query, k_cache, v_cache, block_tables, seq_lens) -> tuple[int, int]:
    """Shared checks of the attention launchers; returns (num_seqs, group size = heads per KV head)."""
    check_cache(k_cache, v_cache)
    check_float_dtype(query, "query")
    assert query.dim() == 3, f"query must be (num_tokens, num_heads, head_dim); got {tuple(query.shape)}"
    num_kv_heads, head_dim = k_cache.shape[2], k_cache.shape[3]
    num_heads = query.shape[1]
    assert query.shape[2] == head_dim, f"query head_dim {query.shape[2]} != cache head_dim {head_dim}"
    assert num_heads % num_kv_heads == 0, f"num_heads {num_heads} must be a multiple of num_kv_heads {num_kv_heads}"
    assert block_tables.dim() == 2 and not block_tables.dtype.is_floating_point, "block_tables must be a 2-D int tensor"
    num_seqs = block_tables.shape[0]
    assert seq_lens.shape == (num_seqs,) and not seq_lens.dtype.is_floating_point, (
        f"seq_lens must be ({num_seqs},) int; got {tuple(seq_lens.shape)} {seq_lens.dtype}"
    )
    devices = {t.device for t in (query, k_cache, block_tables, seq_lens)}
    assert len(devices) == 1, f"all tensors must share a device; got {devices}"
    return num_seqs, num_heads // num_kv_heads


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def bench_ms(fn: Callable[[], object], device: str, reps: int = 3) -> float:
    """Median milliseconds of ``fn``: ``triton.testing.do_bench`` on CUDA, a few timed calls on CPU."""
    if device.startswith("cuda"):
        import triton.testing

        return triton.testing.do_bench(fn)
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1e3
