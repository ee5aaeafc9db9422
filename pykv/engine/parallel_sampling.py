"""Parallel sampling (``SamplingParams(n=...)``): one request, ``n`` sequences sharing its prompt's blocks.

The request runs alone until its prompt is computed; its first sampled token forks ``n - 1`` more
sequences from the same logits (``pykv.engine.sched.scheduler.Scheduler._fork``), each holding a reference to
every block of the prompt (a block's reference count is the number of sequences using it). A
partly filled last prompt block is copied on write by the first sequence to append to it
(``KVCacheManager._copy_on_write``), as vLLM V0's block manager does (0.6.3.post1
``vllm/core/block_manager.py`` ``fork``, ``append_slots``). Sequence ``k`` is named ``<id>#k``.

Where pykv differs: vLLM V1 (0.10, 0.33) fans ``n`` out into ``n`` independent child requests at
``add_request``, sharing the prompt only through prefix caching (``vllm/v1/engine/parallel_sampling.py``);
pykv forks in every profile, so that the sharing and the copy on write are visible, and under V1
each sequence is then preempted and recomputed on its own, as V1's children are.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from pykv.border.config import EngineConfig
from pykv.border.request import RequestOutput, SamplingParams, sequence_id


def check_n(params: SamplingParams, num_prompt_tokens: int, config: EngineConfig) -> None:
    """Refuse ``n`` sequences that could never run together: more than max_num_seqs, or more than the pool
    can hold (the shared full prompt blocks plus one block of its own per sequence)."""
    n = params.n
    if n == 1:
        return
    if n > config.max_num_seqs:
        raise ValueError(
            f"n={n} sequences can never run together with max_num_seqs={config.max_num_seqs}: the "
            "request waits for room for all of them (as vLLM V0's group does); lower n or raise "
            "max_num_seqs."
        )
    least = num_prompt_tokens // config.block_size + n
    if least > config.usable_gpu_blocks:
        usable = " usable" if config.profile.null_block else ""
        raise ValueError(
            f"n={n} sequences of this {num_prompt_tokens}-token prompt need at least {least} blocks (the "
            f"shared full prompt blocks plus one each) but the pool has {config.usable_gpu_blocks}"
            f"{usable}; lower n or raise num_gpu_blocks."
        )


def fork_generators(params: SamplingParams, seed: int) -> list[torch.Generator]:
    """With a temperature, sequences 1 .. n-1 each sample from a generator of their own, seeded from the request's
    seed, so a sampled run is reproducible whatever the schedule. Greedy sequences need none."""
    if params.n == 1 or params.temperature == 0:
        return []
    return [torch.Generator().manual_seed((seed + 7919 * k) % 2**63) for k in range(1, params.n)]


def sequence_ids(request_id: str, n: int) -> list[str]:
    """The ids of a request's sequences, itself first."""
    return [request_id] + [sequence_id(request_id, k) for k in range(1, n)]


def group_output(outputs: dict[str, RequestOutput], request_id: str, n: int) -> RequestOutput | None:
    """The request's output with every sequence's tokens (None until all n have finished). A request that ended
    before its first token (aborted, ignored) never forked: its output stands alone."""
    first = outputs.get(request_id)
    if first is not None and n > 1 and not first.output_token_ids:
        return replace(first, sequences=[[]])
    ids = sequence_ids(request_id, n)
    if any(i not in outputs for i in ids):
        return None
    assert first is not None  # ids[0] is request_id
    return first if n == 1 else replace(first, sequences=[list(outputs[i].output_token_ids) for i in ids])
