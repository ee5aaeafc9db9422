"""Memory of one learner exploring on their own, away from a class, driven to the 3,000-step cap.

"Explore on my own" branches a private Lab off the class's shared lesson (``SharedLesson.branch_lab``):
it replays its own engine and records its own history, under the app's engine seats (pykv/ui/session/seats.py:
each session's seat is ``lab.memory_estimate`` of its config, KV pools plus a full MAX_STEPS history).
This script branches the last step of a lesson as the Playground would, keeps the engine busy (a new
request whenever the run would end) up to MAX_STEPS recorded steps, and prints the process RSS growth
beside the seat's estimate: the estimate must bound what one explorer really holds.

    python -m bench.bench_explore_memory [--lesson the-preemption-storm] [--steps 3000]
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

from pykv.border.limits import MAX_STEPS
from pykv.border.runtime import configure_torch_threads
from pykv.border.units import fmt_bytes
from pykv.border.workload import SNIPPETS
from pykv.engine.model.loader import load_model
from pykv.lab.lab import lab_config, memory_estimate
from pykv.lessons import load_course
from pykv.lessons.run.shared import SharedLesson


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="the-preemption-storm")
    parser.add_argument("--steps", type=int, default=MAX_STEPS)
    args = parser.parse_args()
    configure_torch_threads()
    lesson = next(lesson for lesson in load_course() if lesson.id == args.lesson)
    app = lab_config(model="tiny")
    loaded = load_model(app.model, app.device, app.dtype)
    shared = SharedLesson(lesson, loaded, app)
    shared.state(shared.num_steps - 1)  # the class has played the whole lesson (shared, not the explorer's)
    gc.collect()
    before, start = rss_bytes(), time.perf_counter()

    lab = shared.branch_lab(shared.num_steps - 1)
    seat = memory_estimate(lab.config, loaded)
    added = 0
    print(
        f"lesson {lesson.id}: explorer branched at engine step {lab.head}; pool {lab.config.num_gpu_blocks} blocks "
        f"× {lab.config.block_size}; seat estimate {fmt_bytes(seat)}"
    )
    while lab.head < args.steps:
        if not lab.step():  # the run would end: keep the engine busy, as a learner adding requests does
            added += 1
            lab.add_request(SNIPPETS[added % len(SNIPPETS)], 64, ignore_eos=True)
        if lab.head % 500 == 0 and lab.cursor == lab.head:
            print(f"  step {lab.head:5d}: RSS +{fmt_bytes(rss_bytes() - before)}")
    gc.collect()
    grown = rss_bytes() - before
    print(
        f"explorer at {lab.head} steps ({added} requests added) in {time.perf_counter() - start:.1f} s: "
        f"RSS +{fmt_bytes(grown)} vs the seat's estimate {fmt_bytes(seat)} "
        f"({'within' if grown <= seat else 'OVER'} the bound)"
    )


if __name__ == "__main__":
    main()
