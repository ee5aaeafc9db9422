"""What one click costs the server: per-click server CPU and time until the new step shows, no browser.

Starts `streamlit run app.py` on the shipped model, opens websocket sessions (st_client.StClient, which speaks
the browser's protocol, message cache included), and has each press a button N times, all sessions at once:

- Playground ``Step`` (key ``step``; the button sits in the live-views fragment, so a press is a fragment run);
- the same with ``attention_backend=torch`` in the URL (eager torch attention instead of interpreted Triton);
- Lessons ``Next`` (key ``lesson_next``, page ``lessons?lesson=<ID>&step=1``: a full-page run that plays the
  lesson to the next step, first visit of each step).

Per-click server CPU = the server process's utime+stime over the clicks / (sessions x clicks); the idle CPU
over the same time (sessions open, nobody clicking) is printed beside it. Time to text = from sending the
click until the element with the new "Step k" / "step k of n" arrives (p50 / p95 / max over every click).

    python -m bench.bench_click_cost [--sessions 1,10] [--clicks 9] [--lesson the-state-machine]
                                     [--root /tmp/pykv_head] [--save bench/results/class_before.txt]

``--root`` runs another checkout of the app (e.g. ``git archive HEAD | tar -x -C /tmp/pykv_head``): the
committed app while the working tree is being edited. Two cores are shared by server and clients here: the
times include the clients' own parsing; the CPU figures are the server's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path

from bench.st_client import StClient
from bench.st_server import ROOT, append_result, serve

CASES = {  # name -> (page url path, query, button key, the text that shows the step: "{k}" is its number)
    "playground Step": ("", "", "step", r"^\*\*Step {k}\*\*"),  # the default page: url path ""
    "playground Step, torch": ("", "attention_backend=torch", "step", r"^\*\*Step {k}\*\*"),
    "lessons Next": ("lessons", "lesson={lesson}&step=1", "lesson_next", r"step {k} of \d+"),
}


def step_on_screen(client: StClient, text: str) -> int:
    node = client.page.find(text.format(k=r"(\d+)"))
    if node is None:
        raise LookupError(f"{client.name}: no step on the page")
    return int(re.search(text.format(k=r"(\d+)"), node.text).group(1))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * len(values)) - 1))]


async def clicker(client: StClient, key: str, clicks: int, text: str, times: list[float], failed: list[str]) -> None:
    """Press ``key`` ``clicks`` times; a click that brings an error (or nothing in 60 s) counts as failed."""
    for k in range(1, clicks + 1):
        t0 = time.monotonic()
        try:
            rx = re.compile(text.format(k=step_on_screen(client, text) + 1))
            await client.click(key)
            found = await client.wait_for(
                lambda: client.page.find(rx, since=t0) or client.page.errors_since(t0),
                60,
                f"/{rx.pattern}/ or an error",
            )
        except (TimeoutError, LookupError, ValueError, ConnectionError) as e:
            failed.append(f"{client.name} click {k}: {type(e).__name__}: {e}")
            continue
        if isinstance(found, list):
            failed.append(f"{client.name} click {k}: {found[0].text[:200]}")
        else:
            times.append(found.t - t0)


async def measure(server, case: str, sessions: int, clicks: int, lesson: str, idle_s: float) -> dict:
    page, query, key, text = CASES[case]
    clients = [StClient(server.url, f"{case}-{i}") for i in range(sessions)]
    await asyncio.gather(*(c.open(query.format(lesson=lesson), page_name=page) for c in clients))
    await asyncio.sleep(2.0)  # let stragglers (reaps, timers) settle
    c0, t0 = server.cpu_s(), time.monotonic()
    await asyncio.sleep(idle_s)
    idle_cores = (server.cpu_s() - c0) / (time.monotonic() - t0)
    bytes0 = sum(sum(c.msg_bytes.values()) for c in clients)
    times: list[float] = []
    failed: list[str] = []
    c0, t0 = server.cpu_s(), time.monotonic()
    await asyncio.gather(*(clicker(c, key, clicks, text, times, failed) for c in clients))
    wall, cpu = time.monotonic() - t0, server.cpu_s() - c0
    n = sessions * clicks
    wire = sum(sum(c.msg_bytes.values()) for c in clients) - bytes0
    errors = [e for c in clients for e in c.errors] + failed
    kinds = sum((c.page.bytes_by_kind for c in clients), start=type(clients[0].page.bytes_by_kind)())
    await asyncio.gather(*(c.close() for c in clients))
    return {
        "case": case,
        "sessions": sessions,
        "clicks": n,
        "cpu_per_click": cpu / n,
        "cpu_total": cpu,
        "wall": wall,
        "idle_cores": idle_cores,
        "idle_per_click": idle_cores * wall / n,
        "p50": pct(times, 50),
        "p95": pct(times, 95),
        "max": max(times, default=float("nan")),
        "kb_per_click": wire / n / 1024,
        "ok": len(times),
        "errors": errors,
        "top_kinds": kinds.most_common(6),
    }


def table(rows: list[dict]) -> str:
    head = (
        f"{'case':<22} {'sess':>4} {'clicks':>6} {'CPU/click':>10} {'(idle/click)':>12} {'CPU total':>9} "
        f"{'wall':>6} {'to text p50':>11} {'p95':>6} {'max':>6} {'KB/click':>8}  failed clicks"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['case']:<22} {r['sessions']:>4} {r['clicks']:>6} {r['cpu_per_click'] * 1e3:>8.0f}ms "
            f"{r['idle_per_click'] * 1e3:>10.1f}ms {r['cpu_total']:>8.1f}s {r['wall']:>5.1f}s "
            f"{r['p50']:>10.2f}s {r['p95']:>5.2f}s {r['max']:>5.2f}s {r['kb_per_click']:>8.0f}  "
            f"{r['clicks'] - r['ok']}"
        )
    lines.append("\nwire bytes by element type (all clicks and opens of the case, top 6):")
    for r in rows:
        kinds = ", ".join(f"{k} {v / 1024:.0f} KB" for k, v in r["top_kinds"])
        lines.append(f"  {r['case']} x{r['sessions']}: {kinds}")
    for r in rows:
        for e in r["errors"][:5]:
            lines.append(f"  error ({r['case']} x{r['sessions']}): {e[:300]}")
    return "\n".join(lines)


async def run_all(server, args) -> list[dict]:
    warm = StClient(server.url, "warm")  # loads the shared weights once (kept by design)
    await warm.open()  # the Playground
    await warm.close()
    rows = []
    for sessions in args.sessions:
        for case in args.cases:
            rows.append(await measure(server, case, sessions, args.clicks, args.lesson, args.idle_s))
            print(table(rows[-1:]).splitlines()[2], flush=True)
            await asyncio.sleep(args.ttl_wait_s)  # closed sessions' engines given back (disconnect TTL + reap)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10])
    parser.add_argument("--clicks", type=int, default=9, help="clicks per session (a lesson needs clicks+1 steps)")
    parser.add_argument("--lesson", default="the-state-machine", help="lesson id (10 steps)")
    parser.add_argument("--cases", type=lambda s: s.split(","), default=list(CASES))
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--ttl-wait-s", type=float, default=45.0, help="pause between cases (session TTL 30 s)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the app checkout to serve")
    parser.add_argument(
        "--st-flag",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="a streamlit config flag for the server, e.g. runner.postScriptGC=false (repeatable)",
    )
    parser.add_argument("--save", type=Path, help="append the table and the command to this file")
    args = parser.parse_args()
    with serve(args.root, extra=tuple(f"--{f}" for f in args.st_flag)) as server:
        rows = asyncio.run(run_all(server, args))
        log = server.log_tail(1500)
    out = table(rows)
    print("\n" + out)
    if log.strip():
        print("server stderr (tail):\n" + log)
    if args.save:
        append_result(
            Path(args.save), args.root, out, " · CPU/click = server utime+stime over the clicks / (sessions x clicks)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
