"""Where one decode step of pykv's engine goes on a CPU: the whole step, the runner, the forward pass, and the
forward with its GEMMs or its paged attention left out (replaced by zeros), in one process.

    python -m bench.bench_step_parts [--runs 60]

8 requests decode at ~150 tokens (block size 32), the shipped model, torch attention, one thread. Each figure is
the engine thread's CPU time (``time.thread_time``: time other work on a shared machine took is not in it), with a
64 MiB buffer written before each run so the weights and the KV cache come from memory, as in a served step;
min and median over ``--runs``. The parts do not add up exactly: a part left out also leaves the caches to the
others. Results: bench/results/<date>-cpu-step-parts.txt.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch

import pykv.engine.model.model as model_module
from oracle import pykv_side
from pykv import EngineConfig, LLMEngine, SamplingParams
from pykv.border.runtime import configure_torch_threads


def _timed(fn: Callable[[], object], runs: int, evict: torch.Tensor) -> str:
    seconds = []
    for _ in range(runs):
        evict.add_(1)
        c0 = time.thread_time()
        fn()
        seconds.append(time.thread_time() - c0)
    return f"min {min(seconds) * 1e3:.2f} ms, median {statistics.median(seconds) * 1e3:.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=60)
    args = ap.parse_args()
    configure_torch_threads()
    config = EngineConfig(block_size=32, num_gpu_blocks=64, max_num_seqs=8, attention_backend="torch")
    engine = LLMEngine(config, loaded=pykv_side._loaded())
    for i in range(8):
        engine.add_request(list(range(10 + i, 60 + i)), SamplingParams(max_tokens=400, ignore_eos=True))
    for _ in range(100):
        engine.step()
    evict = torch.zeros(16 * 2**20)
    print("whole step:", _timed(engine.step, args.runs, evict))
    out = engine.scheduler.schedule(engine.step_count + 1)
    print(
        "runner (prepare, forward, sampling):",
        _timed(lambda: engine.runner.run(out, engine.scheduler.requests), args.runs, evict),
    )
    ids, positions, meta, rows, _ = engine.runner.prepare(out, engine.scheduler.requests)
    model, caches = engine.loaded.model, engine.cache.gpu_cache

    def forward() -> None:
        model(ids, positions, caches, meta, engine.backend, rows)

    real_attention, real_linear = model_module.paged_attention, model_module.tiled_linear

    def no_attention(backend, q, k, v, k_cache, v_cache, meta, scale):  # noqa: ARG001
        return torch.zeros(q.shape)

    def no_linear(x, weight_t, bias=None):  # noqa: ARG001
        return torch.zeros(x.shape[0], weight_t.shape[1])

    for label, attention, linear in (
        ("forward", real_attention, real_linear),
        ("forward without paged attention", no_attention, real_linear),
        ("forward without the layers' GEMMs", real_attention, no_linear),
        ("forward without either", no_attention, no_linear),
    ):
        model_module.paged_attention, model_module.tiled_linear = attention, linear
        try:
            print(f"{label}:", _timed(forward, args.runs, evict))
        finally:
            model_module.paged_attention, model_module.tiled_linear = real_attention, real_linear


if __name__ == "__main__":
    main()
