"""The one place the model calls attention: store this step's K/V, then attend over the paged cache.

A backend is a set of three functions with the signatures of ``pykv_kernels.reference`` (the ground truth every
backend is tested against), typed by the protocols of ``pykv_kernels.attention_kernels`` (mypy checks the torch and
Triton functions against them); swapping the backend swaps the kernels and nothing else.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from dataclasses import dataclass, replace
from typing import Callable, Literal, ParamSpec, TypeVar

import torch

from pykv_kernels import torch_paged
from pykv_kernels.attention_kernels import PagedDecodeAttention, PagedPrefillAttention, StoreKV

# What ``attention_backend="auto"`` runs on a CPU for a *stepwise* engine (the lab's Playground and Lessons):
# "triton" (the default: the real kernels, through Triton's interpreter) or "torch". The test suite sets "torch" so
# its many app and lesson replays stay fast; a few tests run the Triton path explicitly.
STEPWISE_CPU_ENV = "PYKV_STEPWISE_CPU_BACKEND"


@dataclass(frozen=True)
class AttentionBackend:
    name: Literal["torch", "triton"]
    store_kv: StoreKV
    prefill: PagedPrefillAttention
    decode: PagedDecodeAttention
    how: Literal["torch", "compiled", "interpreted"] = "torch"
    later_layers: "AttentionBackend" | None = None  # the backend of every layer after the first (None: this one)

    def for_layer(self, index: int) -> "AttentionBackend":
        return self if index == 0 or self.later_layers is None else self.later_layers

    @property
    def label(self) -> str:
        """What ran, as the app and the CLI say it ("... attention on cpu"): "torch (paged SDPA)", "triton
        (interpreted on CPU)", "triton (interpreted on CPU, first layer; torch on the others)"."""
        how = {"torch": "paged SDPA", "compiled": "compiled", "interpreted": "interpreted on CPU"}[self.how]
        if self.later_layers is not None:
            how += f", first layer; {self.later_layers.name} on the others"
        return f"{self.name} ({how})"


# Plain torch: pykv_kernels.torch_paged, SDPA per query row with keys padded by the row's own position, so a row's
# output is bitwise the same whatever shares its step (greedy identity needs that; the references' shapes follow
# the batch and the chunk) and the engine runs ~2x faster than on the references.
TORCH_BACKEND = AttentionBackend(
    "torch", torch_paged.store_kv, torch_paged.paged_prefill_attention, torch_paged.paged_decode_attention
)


# FIRST_LAYER_ON_CPU: a stepwise "auto" engine on a CPU runs the interpreted kernels on layer 0 (the layer whose
# launches the kernel view shows) and torch on the others: interpreted on every layer, a storm step costs ~7x torch's
# (45 vs 6 ms), more than a Step click can afford (`python -m bench.bench_clicks`). The history is the same step for
# step either way (`python -m bench.backend_parity`); "triton" runs every layer on the kernels.


def resolve_backend(name: str, device: str, stepwise: bool = False) -> AttentionBackend:
    """``"torch"``: plain torch (``pykv_kernels.torch_paged``). ``"triton"``: our kernels, compiled on CUDA,
    interpreted on CPU.
    ``"auto"``: Triton compiled on CUDA (falling back to torch where Triton is not installed). On a CPU,
    Triton through its interpreter on the first layer and torch on the others for a ``stepwise`` engine (the
    lab's Playground and Lessons, where each step is looked at: FIRST_LAYER_ON_CPU above), else torch (runs
    to completion at scale: the Sweep, the CLI, the benchmarks). ``$PYKV_STEPWISE_CPU_BACKEND=torch`` keeps
    stepwise engines on torch; so does a process where triton is missing or was imported before the
    interpreter could be switched on (``prepare_stepwise_attention`` does that at start-up).

    Only a choice of Triton imports triton: importing the kernels goes through ``pykv_kernels.triton_utils``,
    which switches the interpreter on first on a machine without CUDA. ``"torch"`` and a headless
    ``"auto"`` on CPU leave triton unimported and the environment as it was.
    """
    if name == "torch":
        return TORCH_BACKEND
    if name == "auto":
        if device.startswith("cuda") and _triton_installed():
            from pykv_kernels import triton_backend as tb

            if not tb.interpreted():  # a GPU box started with TRITON_INTERPRET=1 stays on fast torch
                return _triton_backend(device)
        elif not device.startswith("cuda") and stepwise and _stepwise_triton_wanted():
            try:
                return replace(_triton_backend(device), later_layers=TORCH_BACKEND)  # see FIRST_LAYER_ON_CPU
            except ValueError:  # triton missing, or imported too early to interpret: plain torch serves
                return TORCH_BACKEND
        return TORCH_BACKEND
    if name == "triton":
        return _triton_backend(device)
    raise ValueError(f"Unknown attention_backend {name!r}; use 'auto', 'torch' or 'triton'.")


def _stepwise_triton_wanted() -> bool:
    return os.environ.get(STEPWISE_CPU_ENV, "triton").strip().lower() != "torch"


def prepare_stepwise_attention() -> None:
    """For a process that will run stepwise engines on a CPU (the app): switch Triton's interpreter on now,
    before loading a model imports triton (torch's meta-device init imports torch._dynamo, which imports
    triton). Does nothing with CUDA, without triton, or when stepwise engines are kept on torch."""
    if _triton_installed() and _stepwise_triton_wanted():
        from pykv_kernels.launch_utils import use_interpreter_without_cuda

        try:
            use_interpreter_without_cuda()
        except RuntimeError:  # triton already imported compiled: "auto" falls back to torch (resolve_backend)
            pass


def prepare_backend(name: str, device: str, stepwise: bool = False) -> None:
    """Before the model load (which imports triton through torch._dynamo): switch Triton's interpreter on
    when ``resolve_backend(name, device, stepwise)`` would want it, so that
    ``LLMEngine(EngineConfig(attention_backend="triton"))`` works on a CPU from a plain script without
    ``TRITON_INTERPRET=1``. Does nothing on CUDA, without triton, or for the torch backend; if triton was
    imported already, ``resolve_backend`` says so in one line."""
    if device.startswith("cuda") or not _triton_installed():
        return
    if name == "triton" or (name == "auto" and stepwise and _stepwise_triton_wanted()):
        from pykv_kernels.launch_utils import use_interpreter_without_cuda

        try:
            use_interpreter_without_cuda()
        except RuntimeError:  # too late: resolve_backend raises its clear error ("triton") or serves torch ("auto")
            pass


def _triton_installed() -> bool:
    # find_spec, not `import triton`: an import here would come before the interpreter switch that
    # pykv_kernels.triton_utils makes on the way into Triton.
    return importlib.util.find_spec("triton") is not None


def _triton_backend(device: str) -> AttentionBackend:
    if not _triton_installed():
        raise ValueError(
            "attention_backend='triton' needs the `triton` package, which is not installed here (Triton publishes "
            "wheels for Linux only). Install it with `pip install triton` on Linux, or use attention_backend='torch'."
        )
    try:
        from pykv_kernels import triton_backend as tb
    except RuntimeError as e:  # the interpreter could not be switched on in time (pykv_kernels.launch_utils)
        raise ValueError(
            f"attention_backend='triton' on device={device!r}: {e}; or use attention_backend='torch'."
        ) from None

    if not device.startswith("cuda") and not tb.interpreted():
        raise ValueError(
            f"attention_backend='triton' on device={device!r} needs Triton's interpreter, but the kernels were "
            "compiled for CUDA (TRITON_INTERPRET was not 1 when they were first imported). Start the process with "
            "TRITON_INTERPRET=1, use device='cuda', or use attention_backend='torch'."
        )
    if not tb.interpreted():
        return AttentionBackend(
            "triton", tb.store_kv, tb.paged_prefill_attention, tb.paged_decode_attention, "compiled"
        )
    return AttentionBackend(
        "triton",
        _one_at_a_time(tb.store_kv),
        _one_at_a_time(tb.paged_prefill_attention),
        _one_at_a_time(tb.paged_decode_attention),
        "interpreted",
    )


# Triton's interpreter is not thread-safe: a launch patches triton.language process-wide while it runs, so two
# sessions of the app stepping at once (Streamlit runs each on its own thread) would break each other's kernels
# ("Did you forget to add @triton.jit?"). Interpreted launches take turns.
INTERPRETER_LOCK = threading.RLock()


P = ParamSpec("P")
R = TypeVar("R")


def _one_at_a_time(launch: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(launch)
    def serialised(*args: P.args, **kwargs: P.kwargs) -> R:
        with INTERPRETER_LOCK:
            return launch(*args, **kwargs)

    return serialised


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
