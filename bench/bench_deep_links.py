"""How long a deep link takes: a new session opening the Playground at `?preset=storm&step=K`, which replays K
engine steps (as the lab runs on a CPU: interpreted Triton on the first layer, torch on the others) before it
draws.

Starts `streamlit run app.py` on the shipped model and opens each link in a fresh websocket session
(bench/st_client.py), one after another, timing from the request until the script run has finished: the server's
share of what a user waits for (the browser then draws the page, ~0.3-0.5 s here, not counted). Each link is
opened twice: a second visit replays again (a session's history is its own).

    python -m bench.bench_deep_links [--steps 60,150] [--query preset=storm]
                                     [--save bench/results/<date>-cpu-deep-links.txt]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from bench.st_client import StClient
from bench.st_server import ROOT, append_result, serve


async def open_seconds(url: str, query: str) -> float:
    client = StClient(url, timeout_s=600)
    try:
        t0 = time.monotonic()
        await client.open(query)
        return time.monotonic() - t0
    finally:
        await client.close()


async def measure(url: str, query: str, steps: list[int]) -> str:
    await open_seconds(url, f"{query}&step=1")  # the model and the page's modules loaded once, as on a live server
    lines = [f"{'link':44s} {'first':>7s} {'again':>7s} {'per step':>9s}"]
    for k in steps:
        link = f"?{query}&step={k}"
        first, again = await open_seconds(url, link[1:]), await open_seconds(url, link[1:])
        lines.append(f"{link:44s} {first:6.2f}s {again:6.2f}s {1e3 * min(first, again) / k:7.0f}ms")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="60,150", help="comma-separated steps to link to")
    ap.add_argument("--query", default="preset=storm", help="the rest of the link's query")
    ap.add_argument("--save", type=Path, help="append the table to this results file")
    args = ap.parse_args()
    steps = [int(s) for s in args.steps.split(",") if s.strip()]
    with serve() as server:
        out = asyncio.run(measure(server.url, args.query, steps))
    out += f"\nload 1m at the end: {os.getloadavg()[0]:.2f}"
    print(out)
    if args.save:
        append_result(args.save, ROOT, out)


if __name__ == "__main__":
    main()
