"""What a diagnosis of a trace costs and keeps (issue 50 #3, #4): peak RSS, the RSS and Python memory the diagnosis
still holds once read, and the CPU time, for hostile and plain traces made here. ``--root`` measures another
checkout (each case runs in a fresh process of that tree).

    python -m bench.bench_trace_memory [--root /tmp/before] [--cases plain95,ids5000gz,newlinesgz] [--cpu-s 60|none]

``--cpu-s``: the page's read budget (Your server: 60 s of CPU); ``none``: the command line's (lines and bytes only).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make(case: str, folder: Path) -> Path:
    path = folder / {"plain95": "plain95.jsonl", "ids5000gz": "ids5000.jsonl.gz", "newlinesgz": "newlines.gz"}[case]
    if path.exists():
        return path
    if case == "plain95":  # ~95 MB of Mooncake rows, 12 hash ids each, distinct times
        with open(path, "w") as f:
            size, i = 0, 0
            while size < 95_000_000:
                ids = ", ".join(str(1000 * i + k) for k in range(12))
                row = f'{{"timestamp": {i * 7}, "input_length": {6000 + i % 997}, "output_length": {300 + i % 89}, '
                row += f'"hash_ids": [{ids}]}}\n'
                f.write(row)
                size += len(row)
                i += 1
    elif case == "ids5000gz":  # identical rows of 5,000 hash ids, gzipped (~15.7 MB)
        row = json.dumps(
            {"timestamp": 0, "input_length": 2_560_000, "output_length": 10, "hash_ids": list(range(5000))}
        )
        with gzip.open(path, "wb", compresslevel=9) as f:
            block = (row + "\n").encode() * 1000
            for _ in range(80):  # 80,000 rows, 2.3 GB: past the reader's byte bound (2 GiB), where it ends
                f.write(block)
    else:  # a 2.6 MB .gz of newlines: 2 GiB of empty lines
        with gzip.open(path, "wb", compresslevel=9) as f:
            f.write(b'{"timestamp": 0, "input_length": 1, "output_length": 1}\n')
            block = b"\n" * (1 << 24)
            for _ in range(128):
                f.write(block)
    return path


PROBE = r"""
import gc, json, pickle, resource, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
from pykv.bridge import diagnose
budget = {}
if sys.argv[2] != "none":  # the page's budget (not in a tree from before it)
    from pykv.bridge.base.bounded_reader import ReadBudget
    budget = {"budget": ReadBudget(cpu_s=float(sys.argv[2]))}
start_rss, cpu = rss(), time.process_time()
try:
    d = diagnose(sys.argv[1], **budget)
    notes = [n for n in d.notes][-3:]
except (ValueError, MemoryError) as e:
    d, notes = None, [type(e).__name__ + ": " + str(e)]
cpu = time.process_time() - cpu
gc.collect()
held = len(pickle.dumps(d)) / 2**20  # what the diagnosis holds, shared objects once (a lower bound in memory)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rss_before_mb": round(start_rss), "peak_rss_mb": round(peak), "rss_after_mb": round(rss()),
                  "diagnosis_pickled_mb": round(held, 1), "cpu_s": round(cpu, 1), "notes": notes}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--cases", default="plain95,ids5000gz,newlinesgz")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--files", type=Path, default=Path(tempfile.gettempdir()) / "pykv_trace_bench")
    parser.add_argument("--cpu-s", default="none", help="the read's CPU budget (the page's: 60); none: unbounded")
    parser.add_argument("--max-gib", type=float, default=6.0, help="address-space limit of each probe (a shared box)")
    args = parser.parse_args()
    args.files.mkdir(parents=True, exist_ok=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# app tree {args.root}; read budget {args.cpu_s} s of CPU; load average {load} (1/5/15 min) at the start")
    for case in args.cases.split(","):
        path = make(case, args.files)
        env = os.environ | {"PYTHONPATH": str(args.root)}
        try:
            limit = int(args.max_gib * 2**30)
            done = subprocess.run(
                [sys.executable, "-c", PROBE, str(path), args.cpu_s],
                env=env,
                cwd=args.root,  # `python -c` puts the working directory first on sys.path
                capture_output=True,
                text=True,
                timeout=args.timeout,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
            )
            out = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
        except subprocess.TimeoutExpired:
            out = f"killed after {args.timeout:g} s"
        print(f"{case} ({path.stat().st_size / 1e6:.1f} MB on disk): {out}", flush=True)


if __name__ == "__main__":
    main()
