"""The sweep's timings beside a CPU hog: does the clock the Sweep page shows keep its order when the machine is busy?

    python -m bench.bench_sweep_hog                         # recompute under v0.6, pools 16..36, 3 repeats each
    python -m bench.bench_sweep_hog --pool-sizes 20,28,36 --repeats 5 --hogs 2
    python -m bench.bench_sweep_hog --max-tokens 96 --pool-sizes 24,32,40,48,56 --repeats 5   # longer victims

Runs the same sweep (the small storm, 8 x 48 tokens, recompute under vLLM 0.6.3) twice: once as the machine is, once
with ``--hogs`` processes spinning beside it (``while True: pass``, one per CPU by default). For each clock (the
engine thread's CPU time, ``time.thread_time``, which the page shows by default; and wall time) it prints each
point's re-prefill cost per recomputed token (the median of the repeats, with the fastest and slowest) and checks
the order the sweep should keep: a bigger pool is never slower per recomputed token than a smaller one by more than
the bigger pool's spread. Then how much the hog moved each clock's medians. Counts are checked to be the same with
and without the hog (the schedule does not depend on the clock).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import time
from itertools import combinations

import pandas as pd

from pykv.border.runtime import configure_torch_threads
from pykv.border.timing_measures import MEASURES, twin
from pykv.engine.model.loader import load_model
from pykv.lab.sweep import SweepSpec, default_base, parse_values, run_sweep

HOG = "while True:\n    pass\n"
COUNTS = ["preemptions", "recomputed_tokens", "swapped_bytes", "steps"]


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def per_token(runs: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Each point's recompute time per recomputed token on ``measure``'s clock, µs: median, fastest, slowest."""
    name = twin("recompute_s", measure)
    rows = runs[runs["recomputed_tokens"] > 0]
    tokens = rows["recomputed_tokens"].astype(float)
    return pd.DataFrame(
        {
            "value": rows["value"],
            "tokens": rows["recomputed_tokens"],
            "median": rows[name] / tokens * 1e6,
            "lo": rows[f"{name}_lo"] / tokens * 1e6,
            "hi": rows[f"{name}_hi"] / tokens * 1e6,
        }
    ).sort_values("value")


def order_breaks(points: pd.DataFrame) -> list[str]:
    """Pairs (smaller pool, bigger pool) where the bigger is slower per token by more than its own spread."""
    breaks = []
    for (_, small), (_, big) in combinations(points.iterrows(), 2):
        excess = big["median"] - small["median"]
        spread = big["hi"] - big["lo"]
        if excess > spread:
            breaks.append(
                f"pool {int(big['value'])} is {excess:.2f} µs/token slower than pool {int(small['value'])} "
                f"(its spread {spread:.2f})"
            )
    return breaks


def sweep(spec: SweepSpec, loaded, label: str) -> pd.DataFrame:
    print(f"[{label}] before: {load()}", flush=True)
    t0 = time.perf_counter()
    runs = run_sweep(spec, loaded=loaded).runs
    print(f"[{label}] {spec.num_runs} runs in {time.perf_counter() - t0:.1f} s; after: {load()}", flush=True)
    return runs


def report(runs: pd.DataFrame, label: str) -> dict[str, pd.DataFrame]:
    tables = {}
    for measure in MEASURES:
        points = per_token(runs, measure)
        tables[measure] = points
        breaks = order_breaks(points)
        pairs = len(points) * (len(points) - 1) // 2
        print(f"[{label}] {MEASURES[measure]}: recompute per recomputed token (µs, median [fastest, slowest]):")
        for _, p in points.iterrows():
            spread = (p["hi"] - p["lo"]) / p["median"] if p["median"] else 0.0
            print(
                f"    pool {int(p['value']):>3}: {int(p['tokens']):>5} tokens  {p['median']:8.2f} "
                f"[{p['lo']:8.2f}, {p['hi']:8.2f}]  spread {spread:4.0%}"
            )
        verdict = "order kept" if not breaks else "ORDER BROKEN"
        print(f"[{label}] {MEASURES[measure]}: {verdict}: {len(breaks)} of {pairs} pairs slower beyond the spread")
        for line in breaks:
            print(f"    {line}")
    return tables


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool-sizes", default="16,20,24,28,32,36")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2, help="spinning processes (default: CPUs)")
    parser.add_argument("--max-tokens", type=int, default=None, help="the small storm's max_tokens (default: its own)")
    args = parser.parse_args()
    logging.getLogger("pykv").setLevel(logging.ERROR)
    configure_torch_threads()
    spec = SweepSpec(
        workload_args={} if args.max_tokens is None else {"max_tokens": args.max_tokens},
        values=parse_values(args.pool_sizes),
        modes=("recompute",),
        base=default_base(),
        repeats=args.repeats,
    )
    loaded = load_model(spec.base.model)
    print(
        f"{spec.workload_text()}, {'; '.join(s.label for s in spec.series)}, pools {args.pool_sizes}, "
        f"{args.repeats} repeats; {os.cpu_count()} CPUs; hog: {args.hogs} spinning processes"
    )
    quiet = sweep(spec, loaded, "as is")
    as_is = report(quiet, "as is")
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs)]
    try:
        time.sleep(1.0)  # let the spinners take their share
        busy = sweep(spec, loaded, "hog")
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    under_hog = report(busy, "hog")
    same = quiet[COUNTS].reset_index(drop=True).equals(busy[COUNTS].reset_index(drop=True))
    print(f"counts the same with and without the hog: {same}")
    for measure in MEASURES:
        ratios = under_hog[measure]["median"].values / as_is[measure]["median"].values
        run_ratio = (busy[twin("wall_s", measure)] / quiet[twin("wall_s", measure)]).tolist()
        print(
            f"hog / as is, {MEASURES[measure]}: per recomputed token x{statistics.median(ratios):.2f} (median over "
            f"pools), end-to-end x{statistics.median(run_ratio):.2f}"
        )
    broken = [m for m in MEASURES if order_breaks(under_hog[m])]
    print(f"under the hog, the order broke on: {', '.join(MEASURES[m] for m in broken) or 'neither clock'}")
    return 0 if same and "cpu" not in broken else 1


if __name__ == "__main__":
    sys.exit(main())
