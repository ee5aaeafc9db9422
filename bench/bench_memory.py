"""Memory of a long headless run: the engine keeps no history, so its RSS must not grow with steps.

Runs the shipped model for 3,000 engine steps with a steady stream of requests (a new one whenever
one finishes, so the pool stays over-subscribed and preempts throughout) and prints the process RSS
every 250 steps. Usage: ``python -m bench.bench_memory [--steps 3000] [--pool 24]``.
"""

from __future__ import annotations

import argparse
import logging
import resource
import time
from pathlib import Path

from pykv import EngineConfig, LLMEngine, SamplingParams
from pykv.border.runtime import configure_torch_threads
from pykv.border.workload import SNIPPETS


def rss_mib() -> float:
    """Resident set size now (Linux /proc), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--pool", type=int, default=24, help="num_gpu_blocks (small: preemptions all along)")
    args = parser.parse_args()
    configure_torch_threads()
    logging.getLogger("pykv").setLevel(logging.ERROR)
    engine = LLMEngine(EngineConfig(num_gpu_blocks=args.pool, max_num_seqs=8))
    params = SamplingParams(max_tokens=48, ignore_eos=True)
    added = 0

    def top_up() -> None:
        nonlocal added
        while len(engine.scheduler.requests) < 10:
            engine.add_request(SNIPPETS[added % len(SNIPPETS)], params)
            added += 1

    samples = []
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        top_up()
        engine.step()
        if step % 250 == 0:
            samples.append((step, rss_mib()))
            print(
                f"step {step:>5}  RSS {samples[-1][1]:7.1f} MiB  requests added {added:>4}  "
                f"preemptions {engine.totals().release_preemptions}",
                flush=True,
            )
    wall = time.perf_counter() - t0
    first, last = samples[0][1], samples[-1][1]
    print(
        f"{args.steps} steps in {wall:.1f} s on {engine.config.device}; RSS from step {samples[0][0]} to "
        f"{samples[-1][0]}: {first:.1f} -> {last:.1f} MiB ({last - first:+.1f} MiB); "
        f"{len(engine.outputs)} finished outputs and {len(engine.preemptions())} preemption records kept"
    )


if __name__ == "__main__":
    main()
