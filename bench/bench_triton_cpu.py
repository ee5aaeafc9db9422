"""Interpreted Triton on a CPU, as the lab runs it: the step times of the Playground's default preset and
of every lesson with ``attention_backend="auto"`` (a stepwise engine: the kernels, through Triton's
interpreter, in their CPU launch configuration), and how long each whole lesson takes to replay.

Goals (issue 15): one engine step <= 150 ms median and <= 400 ms p95; a lesson replays in <= 20 s.
One torch thread (the app's setting). Figures move with the machine's load: the load average is printed.

    python -m bench.bench_triton_cpu                    # Playground default (storm, whole run) + every lesson
    python -m bench.bench_triton_cpu --steps 60 --lessons 01,10
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

os.environ["PYKV_STEPWISE_CPU_BACKEND"] = "triton"  # what "auto" runs on a CPU in the Playground and the Lessons

from pykv.engine.model.attention import prepare_stepwise_attention  # noqa: E402

prepare_stepwise_attention()  # as the app does: Triton's interpreter on before the model load imports triton

from pykv.border.runtime import configure_torch_threads  # noqa: E402
from pykv.engine.model.loader import load_model  # noqa: E402
from pykv.lab.lab import Lab, lab_config  # noqa: E402
from pykv.lessons import LessonPlayer, load_lesson  # noqa: E402
from pykv.lessons.course.loader import lesson_files  # noqa: E402


def summary(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{len(ms):4d} steps  median {statistics.median(ms):6.1f} ms  p95 {p95:6.1f} ms  max {ordered[-1]:7.1f} ms"


def playground(loaded, steps: int) -> None:
    lab = Lab(lab_config(model="tiny"), loaded, "storm")
    engine_ms, wall_ms = [], []
    start = time.perf_counter()
    while len(engine_ms) < steps:
        t0 = time.perf_counter()
        if not lab.step():
            break
        wall_ms.append(1e3 * (time.perf_counter() - t0))
        engine_ms.append(1e3 * lab.view.report.step_time_s)
    print(
        f"Playground default (storm preset, {lab.config.num_gpu_blocks} blocks, {lab.engine.backend.label}), "
        f"{time.perf_counter() - start:.1f} s for {len(engine_ms)} steps"
    )
    print(f"  engine step               {summary(engine_ms)}")
    print(f"  step + snapshot (lab)     {summary(wall_ms)}")


def lesson(loaded, path: Path) -> None:
    t0 = time.perf_counter()
    player = LessonPlayer(load_lesson(path), loaded)
    player.goto(player.num_steps - 1)
    seconds = time.perf_counter() - t0
    reports = {}
    for state in player.states:
        for snap in state.lab.snapshots[1:]:
            reports[(id(state.lab.snapshots[0]), snap.step)] = snap.report
    ms = [1e3 * r.step_time_s for r in reports.values() if r is not None]
    failed = sum(len(s.failed_checks) + len(s.errors) for s in player.states)
    backend = player.state.lab.engine.backend.label
    print(
        f"{path.name:45s} replay {seconds:5.1f} s  {summary(ms) if ms else 'no engine steps'}  "
        f"{backend}, {failed} failed checks"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10_000, help="Playground steps to time (default: the whole run)")
    parser.add_argument("--lessons", default="all", help="comma-separated lesson numbers (01,10) or 'all' or 'none'")
    args = parser.parse_args()
    threads = configure_torch_threads()
    loaded = load_model("tiny")
    print(f"{threads} torch thread(s), load average {os.getloadavg()[0]:.2f} at start")
    playground(loaded, args.steps)
    if args.lessons != "none":
        wanted = None if args.lessons == "all" else set(args.lessons.split(","))
        for path in lesson_files():
            if wanted is None or path.name[:2] in wanted:
                lesson(loaded, path)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
