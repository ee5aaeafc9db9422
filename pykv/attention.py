"""The one place the model calls attention: store this step's K/V, then attend over the paged cache.

A backend is a set of three functions with the signatures of ``kernels.reference``; swapping the
backend swaps the kernels and nothing else.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Callable

import torch

from kernels import reference


@dataclass(frozen=True)
class AttentionBackend:
    name: str
    store_kv: Callable[..., None]
    prefill: Callable[..., torch.Tensor]
    decode: Callable[..., torch.Tensor]


TORCH_BACKEND = AttentionBackend(
    "torch", reference.store_kv, reference.paged_prefill_attention, reference.paged_decode_attention
)


def resolve_backend(name: str, device: str) -> AttentionBackend:
    """``"torch"``: the references. ``"triton"``: our kernels, compiled on CUDA, interpreted on CPU.
    ``"auto"``: Triton on CUDA (falling back to torch where Triton is not installed), torch on CPU,
    since the interpreter is ~1000x slower than eager torch.

    Only the ``"triton"`` choice (and ``"auto"`` on CUDA) imports triton: importing the kernels goes
    through ``kernels.triton_utils``, which switches the interpreter on first on a machine without
    CUDA. ``"torch"`` and ``"auto"`` on CPU leave triton unimported and the environment as it was.
    """
    if name == "torch":
        return TORCH_BACKEND
    if name == "auto":
        if device.startswith("cuda") and _triton_installed():
            from kernels import triton_backend as tb

            if not tb.interpreted():  # a GPU box started with TRITON_INTERPRET=1 stays on fast torch
                return _triton_backend(device)
        return TORCH_BACKEND
    if name == "triton":
        return _triton_backend(device)
    raise ValueError(f"Unknown attention_backend {name!r}; use 'auto', 'torch' or 'triton'.")


def _triton_installed() -> bool:
    # find_spec, not `import triton`: an import here would come before the interpreter switch that
    # kernels.triton_utils makes on the way into Triton.
    return importlib.util.find_spec("triton") is not None


def _triton_backend(device: str) -> AttentionBackend:
    if not _triton_installed():
        raise ValueError(
            "attention_backend='triton' needs the `triton` package, which is not installed here (Triton publishes "
            "wheels for Linux only). Install it with `pip install triton` on Linux, or use attention_backend='torch'."
        )
    try:
        from kernels import triton_backend as tb
    except RuntimeError as e:  # the interpreter could not be switched on in time (kernels.launch_utils)
        raise ValueError(f"attention_backend='triton' on device={device!r}: {e}; or use attention_backend='torch'.") \
            from None

    if not device.startswith("cuda") and not tb.interpreted():
        raise ValueError(
            f"attention_backend='triton' on device={device!r} needs Triton's interpreter, but the kernels were "
            "compiled for CUDA (TRITON_INTERPRET was not 1 when they were first imported). Start the process with "
            "TRITON_INTERPRET=1, use device='cuda', or use attention_backend='torch'."
        )
    return AttentionBackend("triton", tb.store_kv, tb.paged_prefill_attention, tb.paged_decode_attention)


@dataclass(frozen=True)
class AttentionMetadata:
    """How this step's flat token batch maps onto requests and cache slots.

    Tokens of each scheduled request are contiguous, in batch order::

        query rows: [ req0 chunk | req1 chunk | req2 ... ]
        query_start_loc = [0, n0, n0 + n1, ...]
    """

    slot_mapping: torch.Tensor  # (num_tokens,) int64
    block_tables: torch.Tensor  # (num_seqs, max_blocks_per_seq) int32, padded with 0 past each table
    seq_lens: torch.Tensor  # (num_seqs,) int32: cached tokens after this step
    query_start_loc: torch.Tensor  # (num_seqs + 1,) int32
    is_all_decode: bool  # every request has exactly one query token


def paged_attention(
    backend: AttentionBackend,
    q: torch.Tensor,  # (num_tokens, num_heads, head_dim)
    k: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
    v: torch.Tensor,
    k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
    v_cache: torch.Tensor,
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:
    backend.store_kv(k, v, k_cache, v_cache, meta.slot_mapping)
    if meta.is_all_decode:
        return backend.decode(q, k_cache, v_cache, meta.block_tables, meta.seq_lens, scale)
    return backend.prefill(q, k_cache, v_cache, meta.block_tables, meta.seq_lens, meta.query_start_loc, scale)
