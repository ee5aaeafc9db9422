"""Lesson 2's exercise (the smallest pool at which the Playground's storm finishes without a preemption) tried by
N learners at once on one server: each session opens the Playground at ?preset=storm&num_gpu_blocks=POOL and
presses Run to end until the run is over, on the lab's CPU default (Triton's interpreter), all sessions in one
process as Streamlit runs them. Prints, per learner, the presses, the wall time, the engine time charged to the
session's allowance, and how many such tries the allowance (pykv.ui.session.budgets) holds:

    python -m bench.bench_exercise_allowance [--learners 20] [--pool 80] [--save]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_PRESSES = 40


def learner(pool: int, out: dict) -> None:
    from streamlit.testing.v1 import AppTest

    from pykv.border.metric_names import PYKV_NUM_PREEMPTIONS
    from pykv.ui.session import budgets

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.query_params["preset"], at.query_params["num_gpu_blocks"] = "storm", str(pool)
    started = time.monotonic()
    at.run()
    presses, refused = 0, 0
    while not at.session_state["lab"].at_end() and presses < MAX_PRESSES:
        at.button(key="run_end").click().run()
        presses += 1
        refused += any("did not run" in w.value for w in at.warning)
        if refused:
            break
    budget: budgets.SessionBudget = at.session_state["compute_budget"]
    lab = at.session_state["lab"]
    out.update(
        presses=presses,
        refused=refused,
        wall_s=time.monotonic() - started,
        done=lab.at_end(),
        charged_s=budgets.SESSION_COMPUTE_S - budget.remaining(),
        preemptions=lab.view.metric(PYKV_NUM_PREEMPTIONS),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=20)
    parser.add_argument("--pool", type=int, default=80)
    parser.add_argument("--save", action="store_true", help="write bench/results/<date>-cpu-exercise-allowance.txt")
    args = parser.parse_args()
    os.environ.setdefault("PYKV_MODEL", "tiny")
    from pykv.ui.session import budgets

    results = [dict() for _ in range(args.learners)]
    threads = [threading.Thread(target=learner, args=(args.pool, out)) for out in results]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    charged = [r["charged_s"] for r in results]
    lines = [
        f"# python -m bench.bench_exercise_allowance --learners {args.learners} --pool {args.pool}",
        f"# {os.cpu_count()} cores; allowance {budgets.SESSION_COMPUTE_S:g} s of engine time per "
        f"{budgets.SESSION_WINDOW_S / 60:g} min, Run to end's budget {budgets.RUN_TO_END_BUDGET_S:g} s a press; "
        f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min) at the end",
        f"{args.learners} learners at once, storm at {args.pool} blocks, Run to end until done: {wall:.0f} s",
        f"finished: {sum(r['done'] for r in results)} of {args.learners}; refused for the allowance: "
        f"{sum(r['refused'] for r in results)}",
        f"presses per learner: {sorted(r['presses'] for r in results)}",
        f"wall per learner s: median {statistics.median(r['wall_s'] for r in results):.0f}, "
        f"max {max(r['wall_s'] for r in results):.0f}",
        f"engine time charged per learner s: median {statistics.median(charged):.1f}, max {max(charged):.1f} "
        f"(tries of this size the allowance holds: {budgets.SESSION_COMPUTE_S / max(charged):.1f})",
        f"preemptions: {sorted({r['preemptions'] for r in results})}",
    ]
    print("\n".join(lines))
    if args.save:
        out = ROOT / "bench" / "results" / f"{time.strftime('%Y-%m-%d')}-cpu-exercise-allowance.txt"
        with out.open("a") as f:
            f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
