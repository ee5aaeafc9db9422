"""Sweep page benchmark: the page's default sweep (the canonical storm at 6 pool sizes x recompute
and swap, on the shipped model; goal: <= 60 s on the 2-core CPU), timed through the page's own code
(AppTest: from pressing Run sweep to the last chart drawn), with the machine's load around it.

    python -m bench.bench_sweep               # twice, after one untimed page load (model weights)
    python -m bench.bench_sweep --repeats 3
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from pykv.lab.sweep import sweep_result

ROOT = Path(__file__).resolve().parents[1]


def sweep_page():
    from pykv.ui.pages import sweep

    sweep.render()


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
        t0 = time.perf_counter()
        at.button(key="FormSubmitter:sweep_form_num_gpu_blocks-Run sweep").click().run()
        seconds = time.perf_counter() - t0
        assert not at.exception and not at.error, (at.exception, at.error)
        run = at.session_state["sweep_run"]
        runs = sweep_result(run.rows, run.costs).runs
        print(
            f"[{i + 1}] default sweep, {len(runs)} runs on {runs['device'].iloc[0]}: {seconds:.1f} s from Run to "
            f"the last chart ({run.seconds:.1f} s in the runs; goal <= 60 s); after: {load()}"
        )
        print(
            runs[
                [
                    "mode",
                    "value",
                    "preemptions",
                    "recomputed_tokens",
                    "swapped_bytes",
                    "wall_s",
                    "tokens_per_s",
                    "recompute_s",
                    "swap_s",
                ]
            ]
            .rename(columns={"value": "num_gpu_blocks"})
            .to_string(index=False, float_format="{:.4g}".format)
        )


if __name__ == "__main__":
    main()
