"""Class mode under load: one instructor and N learners on one `streamlit run` server, no browser.

Every session is a websocket client speaking Streamlit's protocol (st_client.StClient: message cache,
query rewrites, the learners' long polls, st_follow.py). Per round (a fresh server on the shipped model):

1. warm the server (one Playground tab loads the shared weights), take a baseline RSS / idle CPU;
2. the instructor opens ``lessons?lesson=ID&step=1`` and presses ``class_start``; the app writes
   ``class=CODE&key=SECRET`` into its URL;
3. N learners open ``lessons?class=CODE`` (``--join-at-once`` at a time) and must show "step 1 of n";
   the idle CPU of the polling class is measured (``--idle-s``);
4. the instructor presses ``lesson_next`` through the whole lesson, ``--pause-s`` per step; per step:
   each learner's propagation latency (click sent -> its page shows "step k of n"), the server CPU over the
   step window minus the idle polling CPU over the same time, per learner (the goal: <= 50 ms), and raw;
5. ``class_end``, every session closed, RSS followed until it is back near the baseline (the sessions'
   disconnect TTL, .streamlit/config.toml, plus the app's reaper; a fresh tab triggers Streamlit's lazy
   expiry) or ``--after-s`` is up.

``--solo`` runs the same script without the class UI: each learner opens the lesson itself and, at each
instructor step, navigates its own page there (``step=k`` in its URL): the cost of N solo players.

    python -m bench.bench_class [--learners 30] [--lesson the-state-machine] [--pause-s 4] [--save]
    python -m bench.bench_class --ramp 30,60,100 [--save]      # p95 propagation per class size

Results: a table on stdout; ``--save`` appends it with the command to bench/results/class_load.txt.
Server and clients share this machine's cores: latencies include the clients' own work (their CPU is shown).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path

from bench.class_report import Round, StepResult, report, summary_table
from bench.st_client import StClient
from bench.st_server import ROOT, Sampler, append_result, serve

STEP_RX = r"step {k} of {n}\b"
RESULTS = Path(__file__).resolve().parent / "results" / "class_load.txt"


def following(learner: StClient) -> bool:
    """Whether a learner's page still follows: a run_every timer (the app before the long poll) or a held poll."""
    return bool(learner.auto_reruns) or learner.follow.active


def polls(learner: StClient) -> int:
    """The questions a learner's page has asked the server: fragment ticks and long polls."""
    return learner.sent["auto_rerun"] + learner.follow.polls


async def gather_limited(coros, limit: int):
    sem = asyncio.Semaphore(limit)

    async def one(coro):
        async with sem:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros), return_exceptions=True)


async def start_class(server, lesson: str, errors: list[str]) -> tuple[StClient, str, int]:
    teacher = StClient(server.url, "instructor")
    await teacher.open(f"lesson={lesson}&step=1", page_name="lessons")
    node = await teacher.wait_text(r"step 1 of (\d+)", timeout_s=60)
    n = int(re.search(r"step 1 of (\d+)", node.text).group(1))
    if teacher.page.widget("class_start") is None:
        raise SystemExit("no class_start button on the lessons page: the class UI is not there (try --solo)")
    await teacher.click("class_start")
    await teacher.wait_for(lambda: "class" in teacher.params and "key" in teacher.params, 30, "class=…&key=… in URL")
    return teacher, teacher.params["class"], n


async def join(learner: StClient, query: str, n: int, t0: float, joined: list[float]) -> None:
    await learner.open(query, page_name="lessons", timeout_s=120)
    node = await learner.wait_text(STEP_RX.format(k=1, n=n), timeout_s=60)
    joined.append(node.t - t0)


async def one_step(
    teacher: StClient,
    learners: list[StClient],
    k: int,
    n: int,
    args,
    server,
    idle_cores: float,
    lesson: str,
    lost: set[str],
) -> StepResult:
    """The instructor moves to step k; each learner's time until its page shows it (a learner that missed a step
    before is waited on 5 s at most: a page that stopped following stays stopped)."""
    rx = STEP_RX.format(k=k, n=n)
    c0, t0, own0 = server.cpu_s(), time.monotonic(), time.process_time()
    try:
        await teacher.click("lesson_next", timeout_s=60)
    except (TimeoutError, LookupError, ValueError, ConnectionError) as e:  # the class cannot go on
        cpu = server.cpu_s() - c0
        return StepResult(
            k,
            float("nan"),
            [],
            [f"step {k}: instructor: {e}"],
            cpu,
            float("nan"),
            time.monotonic() - t0,
            time.process_time() - own0,
            server.rss_mb(),
            stuck=True,
        )
    t_click = time.monotonic() - t0

    async def seen(learner: StClient) -> float:
        if args.solo:
            await learner.set_query(f"lesson={lesson}&step={k}", timeout_s=120)
        wait_s = min(args.step_timeout_s, 5.0) if learner.name in lost else args.step_timeout_s
        node = await learner.wait_text(rx, since=t0, timeout_s=wait_s)
        return node.t - t0

    results = await asyncio.gather(*(seen(lr) for lr in learners), return_exceptions=True)
    latencies = [r for r in results if isinstance(r, float)]
    failed = [f"step {k}: {lr.name}: {r}" for lr, r in zip(learners, results) if not isinstance(r, float)]
    lost.update(lr.name for lr, r in zip(learners, results) if not isinstance(r, float))  # waited on less from now
    await asyncio.sleep(max(0.0, t0 + args.pause_s - time.monotonic()))
    window, cpu = time.monotonic() - t0, server.cpu_s() - c0
    return StepResult(
        k,
        t_click,
        latencies,
        failed,
        cpu,
        cpu - idle_cores * window,
        window,
        time.process_time() - own0,
        server.rss_mb(),
    )


async def one_round(args, learners_n: int) -> Round:
    rnd = Round(learners_n, solo=args.solo)
    with serve(args.root, extra=tuple(f"--{f}" for f in args.st_flag)) as server:
        sampler = Sampler(server, every_s=1.0)
        warm = StClient(server.url, "warm")
        await warm.open()  # the Playground: loads the shared weights (kept by design)
        await warm.close()
        await asyncio.sleep(args.settle_s)
        rnd.rss_before = server.rss_mb()
        c0, t0 = server.cpu_s(), time.monotonic()
        await asyncio.sleep(3.0)
        rnd.idle_before = (server.cpu_s() - c0) / (time.monotonic() - t0)

        if args.solo:
            teacher = StClient(server.url, "instructor")
            await teacher.open(f"lesson={args.lesson}&step=1", page_name="lessons")
            node = await teacher.wait_text(r"step 1 of (\d+)", timeout_s=60)
            n, query = int(re.search(r"step 1 of (\d+)", node.text).group(1)), f"lesson={args.lesson}&step=1"
        else:
            teacher, code, n = await start_class(server, args.lesson, rnd.errors)
            query, rnd.code = f"class={code}", code
        learners = [StClient(server.url, f"learner-{i}") for i in range(learners_n)]
        t0 = time.monotonic()
        joined: list[float] = []
        results = await gather_limited([join(lr, query, n, t0, joined) for lr in learners], args.join_at_once)
        print(f"{len(joined)}/{learners_n} learners show step 1 after {time.monotonic() - t0:.1f} s", flush=True)
        rnd.errors += [f"join: {lr.name}: {type(r).__name__}: {r}" for lr, r in zip(learners, results) if r]
        rnd.join_s, rnd.joined = time.monotonic() - t0, len(joined)
        rnd.polling = sum(1 for lr in learners if following(lr))
        rnd.rss_joined = server.rss_mb()

        await asyncio.sleep(2.0)
        c0, t0, sent0 = server.cpu_s(), time.monotonic(), sum(polls(lr) for lr in learners)
        await asyncio.sleep(args.idle_s)
        rnd.idle_cores = (server.cpu_s() - c0) / (time.monotonic() - t0)
        rnd.polls_per_s = (sum(polls(lr) for lr in learners) - sent0) / (time.monotonic() - t0)

        lost: set[str] = set()
        for k in range(2, n + 1):
            step = await one_step(teacher, learners, k, n, args, server, rnd.idle_cores, args.lesson, lost)
            rnd.steps.append(step)
            print(step.line(rnd.joined), flush=True)
            if step.stuck:
                print(f"the instructor's click did not finish: stopping at step {k}", flush=True)
                break

        rnd.polling_end, rnd.lost = sum(1 for lr in learners if following(lr)), len(lost)
        rnd.polls_sent = sum(polls(lr) for lr in learners)
        everyone = [teacher, *learners]
        for c in everyone:  # before the class ends: its end is an st.error on every learner's page
            rnd.errors += [f"{c.name}: {e}" for e in c.errors + c.page.exceptions + c.page.error_alerts]
        if not args.solo:
            try:
                await teacher.click("class_end", timeout_s=60)
                await asyncio.sleep(3.0)  # a poll or two: every learner's page leaves the class
                rnd.left = sum(1 for lr in learners if "class" not in lr.params)
            except Exception as e:
                rnd.errors.append(f"class_end: {type(e).__name__}: {e}")
        rnd.peak_rss = sampler.peak_rss_mb()
        await asyncio.gather(*(c.close() for c in everyone), return_exceptions=True)
        ttl = session_ttl_s(args.root)
        rnd.rss_after, rnd.after_s = await wait_release(server, rnd.rss_before, ttl + 15.0, max(args.after_s, ttl + 20))
        sampler.stop()
        rnd.samples = sampler.samples
        rnd.server_log = server.log_tail(20000)
    return rnd


def session_ttl_s(root: Path) -> float:
    """server.disconnectedSessionTTL from the app's .streamlit/config.toml (Streamlit's default: 120 s)."""
    try:
        text = (root / ".streamlit" / "config.toml").read_text()
    except OSError:
        return 120.0
    found = re.search(r"^\s*disconnectedSessionTTL\s*=\s*([0-9.]+)", text, re.M)
    return float(found.group(1)) if found else 120.0


async def wait_release(server, rss_before: float, min_s: float, after_s: float) -> tuple[float, float]:
    """After closing: wait the disconnect TTL (+ the app's reap interval), then until RSS is back within 10 % +
    30 MB of the baseline or ``after_s`` is up; a fresh tab every 10 s triggers Streamlit's lazy expiry."""
    t0 = time.monotonic()
    while True:
        await asyncio.sleep(10.0)
        probe = StClient(server.url, "probe")
        try:
            await probe.open(page_name="about", timeout_s=30)
        finally:
            await probe.close()
        rss, waited = server.rss_mb(), time.monotonic() - t0
        if (waited >= min_s and rss <= rss_before * 1.10 + 30) or waited >= after_s:
            return rss, waited


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--ramp", type=lambda s: [int(x) for x in s.split(",")], help="e.g. 30,60,100")
    parser.add_argument("--lesson", default="the-state-machine", help="lesson id (default: 10 steps)")
    parser.add_argument("--pause-s", type=float, default=4.0, help="the instructor's pause on each step")
    parser.add_argument("--idle-s", type=float, default=8.0, help="idle polling CPU measured this long")
    parser.add_argument("--join-at-once", type=int, default=10, help="learners opening the link at once")
    parser.add_argument("--step-timeout-s", type=float, default=30.0)
    parser.add_argument("--settle-s", type=float, default=3.0)
    parser.add_argument(
        "--after-s",
        type=float,
        default=120.0,
        help="longest wait for RSS after closing (at least the session TTL + 20 s)",
    )
    parser.add_argument("--solo", action="store_true", help="no class UI: every learner plays the lesson itself")
    parser.add_argument("--root", type=Path, default=ROOT, help="the app checkout to serve")
    parser.add_argument(
        "--st-flag",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="a streamlit config flag for the server, e.g. runner.postScriptGC=false (repeatable)",
    )
    parser.add_argument("--save", action="store_true", help=f"append the results to {RESULTS}")
    args = parser.parse_args()
    rounds = []
    for learners_n in args.ramp or [args.learners]:
        print(f"\n== {learners_n} learners{' (solo)' if args.solo else ''} ==", flush=True)
        rounds.append(asyncio.run(one_round(args, learners_n)))
        print(report(rounds[-1]), flush=True)
    out = "\n\n".join(report(r) for r in rounds)
    if len(rounds) > 1:
        out += "\n\n" + summary_table(rounds)
        print("\n" + summary_table(rounds))
    if args.save:
        append_result(RESULTS, args.root, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
