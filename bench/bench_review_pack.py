"""Review pack benchmark: a 300-step run on the shipped model (the CLI's example: storm, 24 blocks, v0.6,
swap to a 64-block CPU pool), then the time to build its pack from the Lab (goal: <= 5 s for the HTML
page), split into its parts, and the zip with every figure exported as SVG and PNG (Chromium via kaleido).

    python -m bench.bench_review_pack               # 3 repeats of the page, 1 of the zip
    python -m bench.bench_review_pack --repeats 5 --steps 300 --no-zip
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from pathlib import Path

from pykv.border.runtime import configure_torch_threads
from pykv.lab.lab import Lab, lab_config
from pykv.review_pack import record_from_lab, render_html, run_pack
from pykv.review_pack.bundle import bundle

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--no-zip", action="store_true")
    args = parser.parse_args()
    logging.getLogger("pykv").setLevel(logging.ERROR)
    configure_torch_threads()
    config = lab_config(vllm_profile="v0.6", num_gpu_blocks=24, preemption_mode="swap", num_cpu_blocks=64)
    lab = Lab(config, preset="storm")
    _, run_s = timed(lab.goto, args.steps)
    print(
        f"run: {lab.head} steps of preset storm on {config.device} in {run_s:.1f} s (not part of the pack); "
        f"{len(lab.view.preemptions)} preemptions; {load()}"
    )
    totals = []
    for i in range(args.repeats):
        record, record_s = timed(record_from_lab, lab)
        pack, pack_s = timed(run_pack, record)
        html, html_s = timed(render_html, pack)
        total = record_s + pack_s + html_s
        totals.append(total)
        print(
            f"[{i + 1}] HTML pack: {total:.2f} s = record {record_s:.3f} + figures and tables {pack_s:.2f} + page "
            f"{html_s:.2f}; {len(html) / 2**20:.1f} MiB, {len(pack.figures())} figures, {len(pack.sections)} "
            f"sections; {load()}"
        )
    print(
        f"HTML pack of a {lab.head}-step run: median {statistics.median(totals):.2f} s, max {max(totals):.2f} s "
        f"(goal <= 5 s)"
    )
    if not args.no_zip:
        (data, problem), zip_s = timed(bundle, pack, html)
        figures = f"{2 * len(pack.figures())} images" if problem is None else f"no images ({problem})"
        print(
            f"zip: {zip_s:.1f} s for the page, {figures}, CSVs and the snapshot; {len(data) / 2**20:.1f} MiB "
            f"(the first export starts Chromium); {load()}"
        )


if __name__ == "__main__":
    main()
