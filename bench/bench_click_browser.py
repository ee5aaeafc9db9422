"""What one Playground Step costs on each side, one session, nobody else: the server's CPU a click, the deltas it
sends, and in headless Chromium the browser's CPU a click (each process type) and its renderer's main-thread time
(CDP ``Performance.getMetrics`` TaskDuration), beside the click-to-redrawn-grid time of bench_clicks.py.

    python -m bench.bench_click_browser [--clicks 30] [--query preset=storm] [--save bench/results/<date>-....txt]

The server's CPU is measured twice: from a websocket client (st_client.py, no browser) and under Chromium. Two
cores are shared by all of it, so a figure moves by ~10% from run to run: compare runs made side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

from bench import bench_clicks
from bench.st_client import StClient
from bench.st_server import ROOT, append_result, cpu_s, serve
from testkit.streamlit_server import CHROMIUM, CHROMIUM_FLAGS


def chromium_cpu() -> Counter[str]:
    """CPU seconds of every Chromium process, by its type (browser, renderer, gpu-process, network, ...)."""
    found: Counter[str] = Counter()
    for pid in subprocess.run(["pgrep", "-f", "chromium"], capture_output=True, text=True).stdout.split():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_text()
            kind = re.search(r"--type=([a-z-]+)", command)
            found["network" if "sub-type=network" in command else kind.group(1) if kind else "browser"] += cpu_s(
                int(pid)
            )
        except (OSError, ValueError):  # gone meanwhile
            continue
    return found


async def websocket_cost(url: str, query: str, clicks: int, server) -> tuple[float, float]:
    """(server CPU ms a click, deltas a click) for Step pressed from a websocket client."""
    client = StClient(url, "alone")
    try:
        await client.open(query)
        for _ in range(3):  # warm: the first steps build what later ones reuse
            await client.click("step")
        client.page.msgs_by_kind.clear()
        before = server.cpu_s()
        for _ in range(clicks):
            await client.click("step")
        return (server.cpu_s() - before) / clicks * 1000, sum(client.page.msgs_by_kind.values()) / clicks
    finally:
        await client.close()


async def browser_cost(url: str, query: str, clicks: int, server) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = await browser.new_page(viewport={"width": 1440, "height": 900})
        cdp = await page.context.new_cdp_session(page)
        await cdp.send("Performance.enable")

        async def main_thread_s() -> float:
            metrics = (await cdp.send("Performance.getMetrics"))["metrics"]
            return next(m["value"] for m in metrics if m["name"] == "TaskDuration")

        await page.goto(f"{url}/?{query}", timeout=180_000)
        await page.locator(bench_clicks.GRID).first.wait_for(timeout=180_000)
        await bench_clicks.browser_clicks(page, 3, time.monotonic() + 300)
        await asyncio.sleep(1)
        task0, chrome0, server0 = await main_thread_s(), chromium_cpu(), server.cpu_s()
        times, failed = await bench_clicks.browser_clicks(page, clicks, time.monotonic() + 600)
        await asyncio.sleep(1)  # what the last click drew after the grid
        chrome = chromium_cpu() - chrome0
        result = dict(
            main_ms=(await main_thread_s() - task0) / clicks * 1000,
            chrome_ms={k: v / clicks * 1000 for k, v in chrome.items() if v > 0},
            server_ms=(server.cpu_s() - server0) / clicks * 1000,
            times=times,
            failed=failed,
        )
        await browser.close()
        return result


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clicks", type=int, default=30)
    ap.add_argument("--query", default="preset=storm", help="the Playground URL's query")
    ap.add_argument("--save", type=Path, help="append the results to this file")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with serve(ROOT) as server:  # 127.0.0.1 only
        ws_ms, deltas = await websocket_cost(server.url, args.query, args.clicks, server)
        b = await browser_cost(server.url, args.query, args.clicks, server)
    per_kind = ", ".join(f"{k} {v:.0f}" for k, v in sorted(b["chrome_ms"].items(), key=lambda kv: -kv[1]))
    out = "\n".join(
        [
            f"{args.clicks} Step clicks on ?{args.query}, one session",
            f"  server CPU a click: {ws_ms:.0f} ms from a websocket client ({deltas:.0f} deltas), "
            f"{b['server_ms']:.0f} ms under Chromium",
            f"  Chromium CPU a click: {sum(b['chrome_ms'].values()):.0f} ms ({per_kind}); renderer main thread "
            f"{b['main_ms']:.0f} ms",
            f"  click to redrawn grid: p50 {bench_clicks.pct(b['times'], 50):.2f} s, "
            f"p95 {bench_clicks.pct(b['times'], 95):.2f} s" + (f"; failed: {b['failed'][:3]}" if b["failed"] else ""),
        ]
    )
    print(out)
    if args.save:
        append_result(args.save, ROOT, out)


if __name__ == "__main__":
    asyncio.run(main())
