"""Turn a SchedulerOutput into the model's input tensors, run the forward pass, sample."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import torch

from pykv.border.request import Request
from pykv.border.step_report import ScheduledChunk
from pykv.engine.kv.cache_engine import CacheEngine
from pykv.engine.kv.kv_cache_manager import KVCacheManager
from pykv.engine.model.attention import AttentionBackend, AttentionMetadata
from pykv.engine.model.loader import LoadedModel
from pykv.engine.model.sampler import sample
from pykv.engine.sched.scheduler import SchedulerOutput
from pykv_kernels.launch_record import LaunchRecord, record_launches


@dataclass(frozen=True)
class RunResult:
    sampled: dict[str, int]  # request id -> new token, for chunks that reached the end of the known tokens
    forward_s: float  # measured wall time of the forward pass (synchronised on CUDA)
    forks: dict[str, list[int]] = field(default_factory=dict)  # n > 1: the first tokens of sequences 1 .. n-1
    launches: tuple[LaunchRecord, ...] = ()  # record_kernels: layer 0's kernel launches (none on the torch backend)
    forward_cpu_s: float = 0.0  # CPU time of the engine thread in the forward pass (time.thread_time; one intra-op
    # thread, runtime.configure_torch_threads): time other work on a busy machine took is not in it


class ModelRunner:
    def __init__(
        self, loaded: LoadedModel, cache: CacheEngine, kv: KVCacheManager, backend: AttentionBackend, device: str
    ):
        self.loaded, self.cache, self.kv, self.backend, self.device = loaded, cache, kv, backend, device

    def prepare(self, out: SchedulerOutput, requests: dict[str, Request]):
        """Flatten the scheduled chunks into one token batch::

        chunk of request r: tokens r.all_token_ids[start : start + n] at positions start .. start+n-1
        slot of position p: table[p // block_size] * block_size + p % block_size
        """
        bs = self.kv.block_size
        positions: list[int]
        slots: list[int]
        input_ids, positions, slots, seq_lens, starts, logits_rows, sampled_ids = [], [], [], [], [0], [], []
        tables = []
        chunks = _computed(out)
        for chunk in chunks:
            request = requests[chunk.request_id]
            table = self.kv.block_tables[chunk.request_id]
            end = chunk.start + chunk.num_new_tokens
            input_ids.extend(request.all_token_ids[chunk.start : end])
            span = range(chunk.start, end)
            positions.extend(span)
            slots.extend(table[p // bs] * bs + p % bs for p in span)
            seq_lens.append(end)
            starts.append(starts[-1] + chunk.num_new_tokens)
            tables.append(table)
            if end == request.num_tokens:
                logits_rows.append(starts[-1] - 1)
                sampled_ids.append(chunk.request_id)
        width = max(len(t) for t in tables)
        block_tables = torch.tensor([t + [0] * (width - len(t)) for t in tables], dtype=torch.int32)
        dev = self.device
        meta = AttentionMetadata(
            slot_mapping=torch.tensor(slots, dtype=torch.int64, device=dev),
            block_tables=block_tables.to(dev),
            seq_lens=torch.tensor(seq_lens, dtype=torch.int32, device=dev),
            query_start_loc=torch.tensor(starts, dtype=torch.int32, device=dev),
            is_all_decode=all(c.num_new_tokens == 1 for c in chunks),
        )
        ids = torch.tensor(input_ids, dtype=torch.int64, device=dev)
        pos = torch.tensor(positions, dtype=torch.int64, device=dev)
        rows = torch.tensor(logits_rows, dtype=torch.int64, device=dev)
        return ids, pos, meta, rows, sampled_ids

    def run(self, out: SchedulerOutput, requests: dict[str, Request], record_kernels: bool = False) -> RunResult:
        """One forward pass and sampling; ``record_kernels`` keeps the first layer's kernel launches."""
        if not _computed(out):
            return RunResult({}, 0.0)
        ids, pos, meta, rows, sampled_ids = self.prepare(out, requests)
        self._sync()
        t0, c0 = time.perf_counter(), time.thread_time()
        with record_launches() if record_kernels else contextlib.nullcontext() as launches:
            logits = self.loaded.model(ids, pos, self.cache.gpu_cache, meta, self.backend, rows)  # (num_sampled, vocab)
        self._sync()
        forward_s, forward_cpu_s = time.perf_counter() - t0, time.thread_time() - c0
        layer0 = tuple(launches) if launches is not None else ()  # the model records its first layer's only
        reqs = [requests[r] for r in sampled_ids]
        tokens = sample(logits, [r.sampling_params for r in reqs], [r.generator for r in reqs])
        forks = {}
        for row, r in enumerate(reqs):  # parallel sampling: n - 1 more first tokens from the same logits
            if r.pending_forks:
                n = r.pending_forks
                forks[r.request_id] = sample(
                    logits[row].expand(n, -1), [r.sampling_params] * n, r.fork_generators or [None] * n
                )
        return RunResult(dict(zip(sampled_ids, tokens)), forward_s, forks, layer0, forward_cpu_s)

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)


def _computed(out: SchedulerOutput) -> list[ScheduledChunk]:
    """The chunks the forward pass computes: all but orphaned ones (vLLM 0.10.2 leaves a victim's chunk in the
    batch; its blocks are gone, so pykv computes nothing for it)."""
    return [c for c in out.chunks if not c.orphaned]
