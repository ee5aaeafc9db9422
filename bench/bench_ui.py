"""UI benchmark: what one Playground step costs, and how long the app takes to first render.

    python -m bench.bench_ui                 # the shipped model if present, else a random checkpoint
    python -m bench.bench_ui --model PATH    # any local Llama/Qwen2 checkpoint folder
    python -m bench.bench_ui --no-cold-start # skip the browser part

1. Step cost (goal: median <= 150 ms on the 2-core CPU): a 256-block pool and 16 requests (the storm
   workload with n=16); each sample is engine step + snapshot + snapshot diff + every Playground
   figure, table and narration built, and the figures serialised to JSON as st.plotly_chart does.
2. Cold start (goal: <= 10 s): from spawning `streamlit run app.py` to the block grid drawn in
   headless Chromium (Debian's /usr/bin/chromium via Playwright). Without Chromium it falls back to
   the first AppTest run in a fresh process, and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pykv import EngineConfig, LLMEngine, default_model_path
from pykv.border.runtime import configure_torch_threads
from pykv.border.snapshot import diff_snapshots
from pykv.border.workload import make_workload
from pykv.lab.workload_runner import WorkloadRunner
from pykv.viz import (
    block_grid_figure,
    block_tables_figure,
    metrics_strip,
    narrate,
    preemptions_frame,
    queues_figure,
    requests_frame,
)

ROOT = Path(__file__).resolve().parents[1]


def pick_model(arg: str | None) -> str:
    if arg:
        return arg
    if (default_model_path() / "config.json").exists():
        return "tiny"
    from testkit.checkpoints import make_checkpoint

    folder = Path(tempfile.mkdtemp(prefix="pykv-bench-")) / "llama"
    print(f"(shipped model not found: using a random Llama checkpoint in {folder})")
    return str(make_checkpoint(folder, "llama"))


def build_views(snap, prev) -> int:
    """Everything the Playground draws for one snapshot; returns the JSON bytes of the figures."""
    diff = diff_snapshots(prev, snap) if prev is not None else None
    figs = [
        block_grid_figure(snap, "gpu", diff.blocks if diff else None, height=460),
        block_grid_figure(snap, "cpu", diff.blocks if diff else None, height=460, legend=False),
        queues_figure(snap, changed=diff.requests if diff else None, height=235),
        block_tables_figure(snap, changed_requests=diff.requests if diff else None),
    ]
    narrate(snap), metrics_strip(snap), requests_frame(snap), preemptions_frame(snap)
    return sum(len(fig.to_json()) for fig in figs)


def bench_steps(model: str, blocks: int, requests: int, max_steps: int) -> dict:
    engine = LLMEngine(EngineConfig(model=model, num_gpu_blocks=blocks, num_cpu_blocks=32, max_num_seqs=16))
    runner = WorkloadRunner(engine, make_workload("storm", n=requests))
    prev = engine.snapshot()
    build_views(prev, None)  # warm-up: plotly's validators load on first use
    step_ms, snap_ms, view_ms, total_ms = [], [], [], []
    json_bytes = 0
    while not runner.done() and len(total_ms) < max_steps:
        t0 = time.perf_counter()
        report = runner.step()
        t1 = time.perf_counter()
        snap = engine.snapshot(report)
        t2 = time.perf_counter()
        json_bytes = build_views(snap, prev)
        t3 = time.perf_counter()
        step_ms.append((t1 - t0) * 1e3), snap_ms.append((t2 - t1) * 1e3), view_ms.append((t3 - t2) * 1e3)
        total_ms.append((t3 - t0) * 1e3)
        prev = snap
    med = statistics.median
    return {
        "steps": len(total_ms),
        "blocks": blocks,
        "requests": requests,
        "device": engine.config.device,
        "backend": engine.backend.name,
        "preemptions": int(engine.metrics.value("vllm:num_preemptions_total")),
        "median_ms": med(total_ms),
        "p90_ms": sorted(total_ms)[int(0.9 * (len(total_ms) - 1))],
        "median_engine_step_ms": med(step_ms),
        "median_snapshot_ms": med(snap_ms),
        "median_views_ms": med(view_ms),
        "figure_json_kib": json_bytes / 1024,
    }


def cold_start(model: str, timeout_s: float = 120.0) -> dict:
    from testkit.streamlit_server import CHROMIUM, CHROMIUM_FLAGS, free_port, start_streamlit, wait_healthy

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or not Path(CHROMIUM).exists():
        return cold_start_apptest(model)
    model_path = ROOT / "pykv/assets/tiny" if model == "tiny" else Path(model)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        port = free_port()
        t0 = time.perf_counter()
        proc = start_streamlit(model_path, port)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc, timeout_s)
            t_server = time.perf_counter()
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(timeout_s * 1000)
            page.goto(url)
            page.locator(".js-plotly-plot").filter(has_text="Device KV pool").first.wait_for()
            page.locator(".js-plotly-plot").filter(has_text="Queues").first.wait_for()
            t_render = time.perf_counter()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            browser.close()
    return {
        "how": "streamlit run + headless Chromium",
        "server_ready_s": t_server - t0,
        "first_render_s": t_render - t0,
    }


def cold_start_apptest(model: str) -> dict:
    code = (
        "import time; t=time.perf_counter(); from streamlit.testing.v1 import AppTest; "
        f"at=AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=120); at.run(); "
        "assert not at.exception; print(time.perf_counter()-t)"
    )
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], env=os.environ | {"PYKV_MODEL": model}, capture_output=True, text=True, check=True
    )
    return {
        "how": "AppTest first run in a fresh process (no Chromium here)",
        "first_render_s": time.perf_counter() - t0,
        "in_process_s": float(out.stdout.strip().splitlines()[-1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="checkpoint folder (default: the shipped model, else a random one)")
    parser.add_argument("--blocks", type=int, default=256)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--max-steps", type=int, default=400)
    parser.add_argument("--no-cold-start", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    model = pick_model(args.model)
    threads = configure_torch_threads()  # as the app does
    result = {"model": model, "step": bench_steps(model, args.blocks, args.requests, args.max_steps)}
    if not args.no_cold_start:
        result["cold_start"] = cold_start(model)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    s = result["step"]
    print(f"model: {model} (torch threads: {threads}, as the app)")
    print(
        f"step + snapshot + figures, {s['blocks']} blocks / {s['requests']} requests, {s['steps']} steps on "
        f"{s['device']} ({s['backend']} attention, {s['preemptions']} preemptions):"
    )
    print(
        f"  median {s['median_ms']:.1f} ms (p90 {s['p90_ms']:.1f} ms; goal <= 150 ms) = engine step "
        f"{s['median_engine_step_ms']:.1f} + snapshot {s['median_snapshot_ms']:.1f} + views "
        f"{s['median_views_ms']:.1f} ms (figure JSON {s['figure_json_kib']:.0f} KiB)"
    )
    if "cold_start" in result:
        c = result["cold_start"]
        print(
            f"cold start to first render ({c['how']}): {c['first_render_s']:.1f} s (goal <= 10 s)"
            + (f"; server ready after {c['server_ready_s']:.1f} s" if "server_ready_s" in c else "")
        )


if __name__ == "__main__":
    main()
