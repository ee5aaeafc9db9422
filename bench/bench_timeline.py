"""Timeline benchmark: what the Playground's run timeline costs on a full history (3,000 steps).

    python -m bench.bench_timeline                 # the shipped model if present, else a random checkpoint
    python -m bench.bench_timeline --model PATH    # any local Llama/Qwen2 checkpoint folder
    python -m bench.bench_timeline --builds 50

The history is real, not synthesized: a ``pykv.lab.lab.Lab`` runs the engine to the Lab's cap of
MAX_STEPS (3,000) steps, on vLLM 0.6's rules with swap preemption (a 32-block device pool, a 12-block
CPU pool) and a storm of 8 requests (96 tokens each, ignore_eos) arriving every 100 steps, so the
pool keeps filling and the timeline has swaps, recomputes, a CPU pool and a SWAPPED queue to draw.

Then ``timeline_figure(lab.snapshots, cursor)`` is built ``--builds`` times (after one warm-up build,
reported apart: plotly loads its validators on first use). Goal: median <= 50 ms. Also reported: the
share of the one pass over the history (``timeline_series``), the figure's JSON size and the time of
``fig.to_json()`` (what ``st.plotly_chart`` sends).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from bench.bench_ui import pick_model  # the same model choice as the UI benchmark
from pykv.border.limits import MAX_STEPS
from pykv.border.runtime import configure_torch_threads
from pykv.border.workload import Workload, WorkloadRequest, make_workload
from pykv.lab.lab import Lab, lab_config
from pykv.viz import timeline_figure
from pykv.viz.timeline import timeline_series

ROOT = Path(__file__).resolve().parents[1]

GOAL_MS = 50.0


def storms(every: int = 100, n: int = 8, max_tokens: int = 96, bursts: int = MAX_STEPS // 100) -> Workload:
    """The storm preset's requests, a burst of ``n`` every ``every`` steps."""
    storm = make_workload("storm", n=n, max_tokens=max_tokens)
    reqs = [
        WorkloadRequest(
            prompt=r.prompt, max_tokens=r.max_tokens, ignore_eos=True, arrival_step=b * every, request_id=f"{b}.{i}"
        )
        for b in range(bursts)
        for i, r in enumerate(storm.requests)
    ]
    return Workload(name="storms", requests=reqs)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="checkpoint folder (default: the shipped tiny model)")
    parser.add_argument("--builds", type=int, default=20)
    args = parser.parse_args()
    threads = configure_torch_threads()
    model = pick_model(args.model)
    config = lab_config(model=model, vllm_profile="v0.6", preemption_mode="swap", num_gpu_blocks=32, num_cpu_blocks=12)
    lab = Lab(config, workload=storms())
    t0 = time.perf_counter()
    lab.goto(MAX_STEPS)
    run_s = time.perf_counter() - t0
    history = lab.snapshots
    modes: dict[str, int] = {}
    for snap in history[1:]:
        for p in snap.report.preempted:
            modes[p.mode] = modes.get(p.mode, 0) + 1
    print(f"model: {model} (torch threads: {threads}); device {config.device}")
    print(
        f"history: {lab.head} steps recorded by the engine in {run_s:.1f} s (vLLM 0.6 rules, swap mode, "
        f"32 + 12 CPU blocks, storms of 8 every 100 steps); preemptions: "
        + ", ".join(f"{n} {mode}" for mode, n in sorted(modes.items()))
    )

    cursor = lab.head // 2
    load = os.getloadavg()[0]  # the timings are wall clock: a busy machine inflates them
    t0 = time.perf_counter()
    fig = timeline_figure(history, cursor)
    warm_ms = (time.perf_counter() - t0) * 1e3
    build_ms, json_ms, series_ms = [], [], []
    for _ in range(args.builds):
        t0 = time.perf_counter()
        timeline_series(history)
        series_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        fig = timeline_figure(history, cursor)
        t1 = time.perf_counter()
        spec = fig.to_json()
        json_ms.append((time.perf_counter() - t1) * 1e3)
        build_ms.append((t1 - t0) * 1e3)
    median = statistics.median(build_ms)
    print(
        f"timeline_figure over {len(history)} snapshots, {args.builds} builds: median {median:.1f} ms, "
        f"p95 {percentile(build_ms, 0.95):.1f} ms, max {max(build_ms):.1f} ms (goal: median <= {GOAL_MS:.0f} ms; "
        f"{'met' if median <= GOAL_MS else 'NOT met'}); first build {warm_ms:.0f} ms (validators loading)"
    )
    print(f"of which the one pass over the history (timeline_series): median {statistics.median(series_ms):.1f} ms")
    print(
        f"figure: {len(fig.data)} traces, {len(fig.layout.shapes)} shape, {len(fig.layout.annotations)} annotations; "
        f"JSON {len(spec) / 1024:.0f} KiB, to_json median {statistics.median(json_ms):.1f} ms"
    )
    print(
        f"load average (1 min) over the builds: {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end, "
        f"on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
