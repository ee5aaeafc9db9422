"""Sweep page benchmark: the page's default sweep (the small storm, 8 x 48 tokens, at 3 pool sizes x recompute and
swap under vLLM 0.6.3, each point 3 times, on the shipped model; goal: <= 15 s on a quiet 2-core CPU), timed through
the page's own code (AppTest: from pressing Run sweep to the last chart drawn), with the machine's load around it
and the process's CPU time over the same click: on a busy machine the wall time says how busy it was, the CPU time
(one intra-op thread: the engine's) what the sweep itself cost, which is what a quiet machine's wall time would be.

    python -m bench.bench_sweep               # twice, after one untimed page load (model weights)
    python -m bench.bench_sweep --repeats 3
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from pykv.lab.sweep import sweep_result

ROOT = Path(__file__).resolve().parents[1]


def sweep_page():
    from pykv.ui.pages import sweep

    sweep.render()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    os.environ.pop("PYKV_MODEL", None)  # the shipped model, as the page's default
    logging.getLogger("pykv").setLevel(logging.ERROR)  # the preemption warnings would bury the table
    at = AppTest.from_function(sweep_page, default_timeout=300).run()  # loads the weights once, untimed
    for i in range(args.repeats):
        print(f"[{i + 1}] before: {load()}")
        t0, c0 = time.perf_counter(), cpu_seconds()
        at.button(key="FormSubmitter:sweep_form_num_gpu_blocks-Run sweep").click().run()
        seconds, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        assert not at.exception and not at.error, (at.exception, at.error)
        run = at.session_state["sweep_run"]
        runs = sweep_result(run.rows, run.costs).runs
        print(
            f"[{i + 1}] default sweep, {len(runs)} points x {run.spec.repeats} repeats on {runs['device'].iloc[0]}: "
            f"{seconds:.1f} s from Run to the last chart ({run.seconds:.1f} s in the runs), {cpu:.1f} s of the "
            f"process's CPU time (goal <= 15 s on a quiet machine); after: {load()}"
        )
        print(
            runs[
                [
                    "series",
                    "value",
                    "preemptions",
                    "recomputed_tokens",
                    "swapped_bytes",
                    "cpu_s",
                    "cpu_s_lo",
                    "cpu_s_hi",
                    "wall_s",
                    "wall_s_lo",
                    "wall_s_hi",
                    "recompute_cpu_s",
                    "swap_cpu_s",
                    "load_1m",
                ]
            ]
            .rename(columns={"value": "num_gpu_blocks"})
            .to_string(index=False, float_format="{:.4g}".format)
        )


if __name__ == "__main__":
    main()
