"""Tabs opened at once on a fresh server (issue 50 #6): start `streamlit run app.py`, and as soon as it answers its
health check open N sessions together (websocket clients: bench/st_client.py) on the Playground; count the pages
that drew an exception, and say how long the last page took. ``--root`` measures another checkout (e.g. `git
archive` of the commit before the fix, unpacked).

    python -m bench.bench_cold_tabs --tabs 10 [--stagger 0.2] [--root /tmp/before] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from bench.st_client import StClient
from bench.st_server import ROOT, serve


async def open_tabs(url: str, tabs: int, stagger_s: float) -> tuple[list[str], float]:
    clients = [StClient(url, name=f"tab-{i}", timeout_s=300) for i in range(tabs)]
    start = time.monotonic()

    async def opened(i: int, c: StClient):
        await asyncio.sleep(i * stagger_s)  # a browser opens its tabs one after another
        return await c.open("", "")

    results = await asyncio.gather(*(opened(i, c) for i, c in enumerate(clients)), return_exceptions=True)
    took = time.monotonic() - start
    problems = []
    for c, result in zip(clients, results):
        if isinstance(result, BaseException):
            problems.append(f"{c.name}: {type(result).__name__}: {result}")
        problems += [f"{c.name}: {e}" for e in c.page.exceptions]
        await c.close()
    return problems, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--stagger", type=float, default=0.2, help="seconds between one tab's opening and the next")
    args = parser.parse_args()
    print(
        f"# {args.tabs} sessions opened {args.stagger:g} s apart on a fresh server, {args.rounds} rounds; "
        f"app tree {args.root}"
    )
    for round_ in range(args.rounds):
        load = os.getloadavg()
        with serve(args.root, model="tiny") as server:
            problems, took = asyncio.run(open_tabs(server.url, args.tabs, args.stagger))
        broken = len({p.split(":", 1)[0] for p in problems})
        print(
            f"round {round_ + 1}: {broken} of {args.tabs} tabs broken, all drawn in {took:.1f} s "
            f"(load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})"
        )
        for p in sorted(set(problems))[:5]:
            print(f"   {p[:200]}")


if __name__ == "__main__":
    main()
