"""AttentionKernels: the three paged-attention operations an attention backend provides, as typed protocols.

Three modules implement them, with the same signatures (positions, names, shapes)::

    pykv_kernels.reference        the ground truth (einsum, fp32) the others are tested against
    pykv_kernels.torch_paged      the engine's "torch" backend (SDPA per query row)
    pykv_kernels.triton_backend   the engine's "triton" backend (the Triton launchers; importing it imports triton)

``pykv.engine.model.attention.AttentionBackend`` holds one function of each kind (``StoreKV``,
``PagedPrefillAttention``, ``PagedDecodeAttention``), so the functions it dispatches to are checked against these
signatures by mypy; the three modules are checked against ``AttentionKernels`` as a whole at the bottom of this file
(for mypy only: nothing is imported at run time, so importing this never imports triton).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import torch


class StoreKV(Protocol):
    """Write each token's K and V rows into its cache slot (vLLM's reshape_and_cache)."""

    def __call__(
        self,
        key: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
        value: torch.Tensor,  # (num_tokens, num_kv_heads, head_dim)
        k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
        v_cache: torch.Tensor,
        slot_mapping: torch.Tensor,  # (num_tokens,) int, flat slot of each token
    ) -> None: ...


class PagedPrefillAttention(Protocol):
    """Each request's new chunk attends to its cached prefix and causally to itself."""

    def __call__(
        self,
        query: torch.Tensor,  # (num_tokens, num_heads, head_dim), requests' chunks back to back
        k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
        v_cache: torch.Tensor,
        block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
        seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache after this step, chunk included
        query_start_loc: torch.Tensor,  # (num_seqs + 1,) offsets of each request's chunk in `query`
        scale: float,
    ) -> torch.Tensor: ...  # (num_tokens, num_heads, head_dim)


class PagedDecodeAttention(Protocol):
    """One query token per request against its whole paged context."""

    def __call__(
        self,
        query: torch.Tensor,  # (num_seqs, num_heads, head_dim): one new token per request
        k_cache: torch.Tensor,  # (num_blocks, block_size, num_kv_heads, head_dim)
        v_cache: torch.Tensor,
        block_tables: torch.Tensor,  # (num_seqs, max_blocks_per_seq) int
        seq_lens: torch.Tensor,  # (num_seqs,) tokens in the cache, the new one included
        scale: float,
    ) -> torch.Tensor: ...  # (num_seqs, num_heads, head_dim)


class AttentionKernels(Protocol):
    """A module of the three operations: ``reference``, ``torch_paged`` and ``triton_backend`` each are one."""

    @property
    def store_kv(self) -> StoreKV: ...

    @property
    def paged_prefill_attention(self) -> PagedPrefillAttention: ...

    @property
    def paged_decode_attention(self) -> PagedDecodeAttention: ...


if TYPE_CHECKING:  # mypy checks each implementation against the protocol; at run time this imports nothing
    from pykv_kernels import reference, torch_paged, triton_backend

    _REFERENCE: AttentionKernels = reference
    _TORCH: AttentionKernels = torch_paged
    _TRITON: AttentionKernels = triton_backend
