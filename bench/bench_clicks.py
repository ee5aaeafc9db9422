"""Click-to-updated-figure in a real browser: Debian's headless Chromium (Playwright) presses the Playground's
Step N times on `streamlit run app.py` (shipped model, loopback only) and times each press until the header
shows the next step *and* the KV-pool grid has been redrawn (the chart's plotly data object replaced), idle and
with M other sessions stepping at once (websocket clients, bench/st_client.py, each pressing Step as fast as the
server answers).

    python -m bench.bench_clicks [--clicks 50] [--others 10] [--query preset=storm] [--budget-s 900]
                                 [--save bench/results/<date>-cpu-clicks.txt]

Targets (issue 28): Step p95 <= 0.5 s idle, <= 1.5 s with 10 other sessions. Bounded: every wait has a timeout,
the whole run stops at --budget-s (what was measured by then is reported, marked partial).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import time
from pathlib import Path

from bench.st_client import StClient
from bench.st_server import ROOT, append_result, serve
from testkit.streamlit_server import CHROMIUM, CHROMIUM_FLAGS

HEADER = re.compile(r"^Step (\d+)\b")
GRID = '.js-plotly-plot:has-text("Device KV pool")'
REDRAWN_JS = """([k, token]) => {
  const head = [...document.querySelectorAll('[data-testid="stMarkdownContainer"] p')]
      .find(p => /^Step \\d+/.test(p.textContent));
  if (!head || !head.textContent.startsWith(`Step ${k} `) && head.textContent !== `Step ${k}`) return false;
  const grid = [...document.querySelectorAll('.js-plotly-plot')].find(g => g.textContent.includes('Device KV pool'));
  return !!grid && grid.data !== undefined && grid.data !== window.__benchData;
}"""
MARK_JS = """(token) => { const grid = [...document.querySelectorAll('.js-plotly-plot')]
  .find(g => g.textContent.includes('Device KV pool')); window.__benchData = grid ? grid.data : null; }"""


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * len(values)) - 1))]


async def shown_step(page) -> int:
    text = await page.get_by_text(HEADER).first.inner_text()
    return int(HEADER.match(text).group(1))


async def browser_clicks(page, clicks: int, deadline: float) -> tuple[list[float], list[str]]:
    """Press Step ``clicks`` times; each time from the press to the new header and the redrawn grid."""
    times, failed = [], []
    for i in range(clicks):
        if time.monotonic() > deadline:
            failed.append(f"click {i + 1}: the run's budget was spent")
            break
        await page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
        k = await shown_step(page)
        token = f"t{i}"
        await page.evaluate(MARK_JS, token)  # the grid's plotly data now: a redraw (Plotly.react) replaces it
        t0 = time.perf_counter()
        await page.locator(".st-key-step button").first.click()
        try:
            await page.wait_for_function(REDRAWN_JS, arg=[k + 1, token], timeout=60_000, polling="raf")
            times.append(time.perf_counter() - t0)
        except Exception as e:  # a bench reports, never stops on one click
            failed.append(f"click {i + 1}: {type(e).__name__}: {str(e)[:200]}")
    return times, failed


async def other_session(url: str, name: str, stop: asyncio.Event, query: str, counts: list[int]) -> None:
    client = StClient(url, name)
    try:
        await client.open(query)
        while not stop.is_set():
            try:
                await client.click("step", timeout_s=60)
                counts.append(1)
            except (TimeoutError, ValueError, ConnectionError, LookupError):
                await asyncio.sleep(0.2)
    finally:
        await client.close()


async def measure(url: str, args, others: int, deadline: float) -> dict:
    from playwright.async_api import async_playwright

    stop, counts = asyncio.Event(), []
    background = [
        asyncio.create_task(other_session(url, f"other-{i}", stop, args.query, counts)) for i in range(others)
    ]
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = await browser.new_page(viewport={"width": 1440, "height": 900})
        await page.goto(f"{url}/?{args.query}", timeout=180_000)
        await page.locator(GRID).first.wait_for(timeout=180_000)
        await page.get_by_text(HEADER).first.wait_for(timeout=180_000)
        if others:  # until every other session steps
            t_wait = time.monotonic()
            while len(counts) < others and time.monotonic() - t_wait < 120:
                await asyncio.sleep(0.25)
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        times, failed = await browser_clicks(page, args.clicks, deadline)
        wall = time.monotonic() - t0
        await browser.close()
    stop.set()
    await asyncio.gather(*background, return_exceptions=True)
    return {
        "others": others,
        "times": times,
        "failed": failed,
        "wall": wall,
        "other_steps": len(counts),
        "load": (load0, os.getloadavg()[0]),
    }


def report(rows: list[dict], clicks: int) -> str:
    goal = {0: 0.5, 10: 1.5}
    lines = [
        f"{'other sessions':>14} {'clicks ok':>9} {'p50':>7} {'p95':>7} {'max':>7} {'goal p95':>8}  "
        f"{'met':>3}  other steps  load 1m (start -> end)"
    ]
    for r in rows:
        t = r["times"]
        g = goal.get(r["others"])
        met = "-" if g is None or not t else ("yes" if pct(t, 95) <= g else "no")
        lines.append(
            f"{r['others']:>14} {len(t):>4}/{clicks:<4} {pct(t, 50):>6.2f}s {pct(t, 95):>6.2f}s "
            f"{max(t, default=float('nan')):>6.2f}s {'' if g is None else f'{g:.1f}s':>8}  {met:>3}  "
            f"{r['other_steps']:>11}  {r['load'][0]:.2f} -> {r['load'][1]:.2f}"
        )
        for f in r["failed"][:5]:
            lines.append(f"    failed: {f}")
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clicks", type=int, default=50)
    ap.add_argument("--others", default="0,10", help="comma-separated counts of other stepping sessions")
    ap.add_argument("--query", default="preset=storm", help="the Playground URL's query")
    ap.add_argument("--budget-s", type=float, default=900.0, help="stop measuring after this long")
    ap.add_argument("--save", type=Path, help="append the results to this file")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    deadline = time.monotonic() + args.budget_s
    rows = []
    with serve(ROOT) as server:  # 127.0.0.1 only
        for others in (int(x) for x in args.others.split(",")):
            if time.monotonic() > deadline:
                break
            rows.append(await measure(server.url, args, others, deadline))
            print(report(rows[-1:], args.clicks), flush=True)
    out = report(rows, args.clicks)
    print("\n" + out)
    if args.save:
        append_result(args.save, ROOT, out)


if __name__ == "__main__":
    asyncio.run(main())
