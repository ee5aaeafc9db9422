"""``python -m pykv attach``: watch a live vLLM server: poll its /metrics, follow its log, count its KV-cache events,
and print a timeline row and the findings (when they change) every interval; Ctrl-C or --duration ends it, with the
window's full diagnosis.

    python -m pykv attach --metrics http://127.0.0.1:8000
    docker logs -f vllm 2>&1 | python -m pykv attach --metrics http://127.0.0.1:8000 --log -
    python -m pykv attach --metrics http://127.0.0.1:8000 --kv-events tcp://127.0.0.1:5557 --duration 120 \\
        --save-baseline calm.json

KV events: start vLLM (0.9.0 or later) with --kv-events-config '{"enable_kv_cache_events": true,
"publisher": "zmq", "endpoint": "tcp://*:5557"}' and give --kv-events tcp://HOST:5557.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable

from pykv.bridge import BridgeInputError, save_baseline
from pykv.bridge.diagnosis import Diagnosis
from pykv.bridge.live.attach import Attach, check_interval
from pykv.cli.diagnose import describe
from pykv.cli.errors import UsageError, check_writable
from pykv.cli.terminal import terminal_safe

MAX_DURATION_S = 7 * 86400.0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "attach",
        help="watch a live vLLM server (/metrics, its log, KV events): a live timeline and findings",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--metrics", default=None, metavar="URL", help="the server, http://HOST:PORT (or its /metrics)")
    p.add_argument("--log", default=None, metavar="FILE|-", help="its log file, followed as it grows; - for stdin")
    p.add_argument(
        "--kv-events", default=None, metavar="ENDPOINT", help="its KV-event publisher, e.g. tcp://127.0.0.1:5557"
    )
    p.add_argument("--interval", type=float, default=5.0, metavar="S", help="seconds between polls (default 5)")
    p.add_argument("--duration", type=float, default=None, metavar="S", help="stop after this many seconds")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="the longest one poll may take")
    p.add_argument("--save-baseline", default=None, metavar="FILE", help="save the window as a baseline at the end")
    p.add_argument("--json", action="store_true", help="at the end, print the window's diagnosis as JSON (stdout)")
    p.set_defaults(func=cmd_attach)


def cmd_attach(args: argparse.Namespace) -> int:
    check_interval(args.interval)
    if args.duration is not None and not 0 < args.duration <= MAX_DURATION_S:
        raise UsageError(f"--duration must be above 0 and at most {MAX_DURATION_S:g} seconds")
    if not 0.1 <= args.timeout <= 120:
        raise UsageError("--timeout must be 0.1 to 120 seconds")
    check_writable(args.save_baseline, "--save-baseline")
    say = (lambda text: print(terminal_safe(text), file=sys.stderr, flush=True)) if args.json else _print
    attach = Attach(args.metrics, args.log, args.kv_events, args.timeout, stream=sys.stdin.buffer)
    try:
        diagnosis = watch(attach, args.interval, args.duration, say)
    finally:
        attach.close()
    return finish(attach, diagnosis, args, say)


def watch(attach: Attach, interval: float, duration: float | None, say: Callable[[str], None]) -> Diagnosis | None:
    """Tick every ``interval`` until ``duration`` passes, the log stream ends (with nothing else to watch) or
    Ctrl-C; say each row and each change of the findings. The last diagnosis (None: nothing was readable)."""
    ends = time.monotonic() + duration if duration else None
    shown: tuple = ()
    diagnosis = None
    try:
        while True:
            started = time.monotonic()
            tick = attach.tick()
            say(tick.row)
            if tick.error:
                say(f"  {tick.error}")
            diagnosis = _diagnose(attach) or diagnosis
            if diagnosis is not None:
                now = tuple((f.id, f.confidence) for f in diagnosis.findings)
                if now != shown:
                    say(findings_line(diagnosis))
                    shown = now
            alone = attach.poller is None and attach.subscriber is None
            if attach.follower is not None and attach.follower.ended and alone:
                break
            if ends is not None and time.monotonic() >= ends:
                break
            pause = interval - (time.monotonic() - started)
            if ends is not None:
                pause = min(pause, ends - time.monotonic())
            if pause > 0:
                time.sleep(pause)
    except KeyboardInterrupt:
        say("stopped (Ctrl-C)")
    return _diagnose(attach) or diagnosis


def _diagnose(attach: Attach) -> Diagnosis | None:
    try:
        return attach.diagnosis()
    except BridgeInputError:
        return None


def findings_line(d: Diagnosis) -> str:
    if not d.findings:
        return "  findings: none: nothing here looks like KV-cache trouble"
    return "  findings: " + "; ".join(f"[{f.confidence}] {f.id}: {f.title}" for f in d.findings)


def finish(attach: Attach, diagnosis: Diagnosis | None, args: argparse.Namespace, say: Callable[[str], None]) -> int:
    counts = attach.kv_counts
    rise, counter = attach.window.preemption_counter()
    if diagnosis is None:
        raise BridgeInputError(
            "nothing readable came while attached: " + (attach.last_error or "no scrape, no stats or start-up line")
        )
    say("\nthe window (" + f"{time.time() - attach.started:.0f} s):")
    say("\n".join(describe(diagnosis)))
    if counter is not None:
        say(f"vllm:num_preemptions_total: +{rise:,} while attached, {counter:,} since the server started")
    if counts is not None:
        say(counts.line())
    if args.save_baseline:
        save_baseline(diagnosis, args.save_baseline)
        say(f"saved the baseline {args.save_baseline}")
    if args.json:
        body = diagnosis.to_json_dict()
        body["attach"] = {
            "preemptions_while_attached": rise,
            "preemption_counter": counter,
            "kv_events": counts.to_json_dict() if counts is not None else None,
        }
        print(json.dumps(body, indent=2, allow_nan=False))
    return 0


def _print(text: str) -> None:
    print(terminal_safe(text), flush=True)
