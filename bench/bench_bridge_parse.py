"""Speed and memory of the bridge's log reader: a 100 MB synthetic vLLM log in one streaming pass.

Target: <= 30 s and <= 600 MB peak RSS on a 2-core machine. The log mixes V0 stats lines, preemption warnings,
uvicorn access lines and unknown lines, as a busy server's stdout does.
Usage: ``python -m bench.bench_bridge_parse [--mb 100] [--save]`` (--save writes bench/results/...-bridge-parse.txt).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from pykv.bridge.base.bounded_reader import TextSource
from pykv.bridge.logs.parser import parse_log

RESULT = Path(__file__).parent / "results" / "2026-12-01-cpu-bridge-parse.txt"


def synthetic_log(path: Path, megabytes: int) -> int:
    """Writes about `megabytes` MB; returns the line count."""
    target = megabytes * 1024 * 1024
    written = lines = 0
    with open(path, "w") as out:
        second = 0
        while written < target:
            second += 1
            day, hour, minute = 1 + second // 86400 % 28, second // 3600 % 24, second // 60 % 60
            stamp = f"06-{day:02d} {hour:02d}:{minute:02d}:{second % 60:02d}"
            block = [
                f"INFO {stamp} metrics.py:341] Avg prompt throughput: {second % 900}.0 tokens/s, Avg generation "
                f"throughput: 812.4 tokens/s, Running: {second % 256} reqs, Swapped: 0 reqs, Pending: 3 reqs, "
                f"GPU KV cache usage: {second % 100}.5%, CPU KV cache usage: 0.0%."
            ]
            block += [f'INFO:     10.0.0.{i}:4{i:04d} - "POST /v1/completions HTTP/1.1" 200 OK' for i in range(6)]
            if second % 10 == 0:
                block.append(
                    f"WARNING {stamp} scheduler.py:1089] Sequence group cmpl-{second} is preempted by "
                    "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. "
                    f"total_num_cumulative_preemption={second * 5 + 1}"
                )
            block.append("Processed prompts: 100%|##########| 10/10 [00:01<00:00, 9.1it/s] some other output")
            text = "\n".join(block) + "\n"
            out.write(text)
            written += len(text)
            lines += len(block)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "server.log"
        lines = synthetic_log(path, args.mb)
        size = path.stat().st_size
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        result = parse_log(TextSource(path))
        elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = "\n".join(
        [
            f"bridge log parse, {size / 1e6:.1f} MB, {lines:,} lines ({time.strftime('%Y-%m-%d')}, CPU, one pass)",
            f"  time        {elapsed:.1f} s   (goal <= 30 s)   {size / 1e6 / elapsed:.1f} MB/s",
            f"  peak RSS    {peak:.0f} MiB (goal <= 600 MB; {rss_before:.0f} MiB before parsing, ru_maxrss)",
            f"  samples     {len(result.samples):,} kept (stride {result.timeline_stride}), "
            f"preemptions >= {result.cumulative_preemptions:,}, lines skipped {result.lines_skipped:,}",
            f"  command     python -m bench.bench_bridge_parse --mb {args.mb}" + (" --save" if args.save else ""),
        ]
    )
    print(report)
    if args.save:
        RESULT.write_text(report + "\n")


if __name__ == "__main__":
    main()
