"""Headless command line: ``python -m pykv run`` drives a workload with vLLM's flag names and prints
vLLM-style logs and a summary; ``python -m pykv generate`` completes one prompt."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Sequence

from pykv.border.limits import MAX_STEPS
from pykv.border.request import SamplingParams
from pykv.border.workload import PRESETS, Workload, make_workload
from pykv.cli.attach import add_parser as add_attach_parser
from pykv.cli.diagnose import add_parser as add_diagnose_parser
from pykv.cli.errors import OneLineParser, UsageError, check_writable, one_line, quoted
from pykv.cli.estimate import add_parser as add_estimate_parser
from pykv.cli.flags import add_engine_flags, check_preset_flags, config_from_args
from pykv.cli.metrics_server import serving_metrics
from pykv.cli.output import WriteFailed, write_atomic
from pykv.cli.summary import engine_header, summary
from pykv.cli.sweep import add_parser as add_sweep_parser
from pykv.cli.terminal import SafeFormatter, terminal_safe
from pykv.cli.vllm import add_parser as add_vllm_parser
from pykv.engine.llm_engine import LLMEngine
from pykv.lab.workload_runner import WorkloadRunner

MAX_STEPS_FLAG = 10_000_000  # --max-steps
# A review pack keeps every step's snapshot of every request: ~0.5 KB per request per step (3.1 GB at 2,000
# requests x 3,000 steps). Requests x steps is held to this, so its peak RSS stays under 1 GB.
MAX_REPORT_REQUEST_STEPS = 1_000_000  # a slim view of each request at each step (review_pack/history.py)
MAX_REPORT_HISTORY_BYTES = 2 * 2**30  # the history's estimate, beside the engine and its KV pool
USAGE, FAILURE, INTERRUPTED = 2, 1, 130  # exit codes: bad input, a run that failed, Ctrl-C


def load_workload(args: argparse.Namespace) -> Workload:
    """The preset named by ``--workload`` (sized by ``--num-requests``/``--max-tokens``) or a workload file."""
    kwargs = check_preset_flags(args, file_ok=True)
    if args.workload in PRESETS:
        return make_workload(args.workload, seed=args.seed, **kwargs)
    return Workload.load(args.workload)


def cmd_run(args: argparse.Namespace) -> int:
    import time

    check_writable(args.export_workload, "--export-workload")
    if not 1 <= args.max_steps <= MAX_STEPS_FLAG:
        raise UsageError(f"--max-steps {args.max_steps} is out of range; use 1 to {MAX_STEPS_FLAG:,}.")
    config = config_from_args(args)
    workload = load_workload(args)
    if args.export_workload:
        write_atomic(args.export_workload, workload.to_json().encode())
    engine = LLMEngine(config)
    print(engine_header(engine), file=sys.stderr)
    runner = WorkloadRunner(engine, workload)
    with serving_metrics(engine.metrics.registry, args.serve_metrics, args.metrics_host, args.linger):
        t0 = time.perf_counter()
        runner.run(max_steps=args.max_steps)
        print(terminal_safe(summary(engine, runner.request_ids, time.perf_counter() - t0)), flush=True)
    if not runner.done():
        print(f"error: stopped after --max-steps {args.max_steps} with requests unfinished", file=sys.stderr)
        return 1
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    try:
        params = SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature)
    except ValueError as e:
        text = one_line(e)
        flag = next(
            (
                f
                for name, f in (("max_tokens", "--max-tokens"), ("temperature", "--temperature"))
                if text.startswith(name)
            ),
            None,
        )
        raise UsageError(f"{flag}: {text}" if flag else text) from None
    engine = LLMEngine(config)
    (out,) = engine.generate([args.prompt], params)
    print(terminal_safe(args.prompt + out.text))  # a model's text may hold control characters too
    return 0


REPORT_FORMATS = {".html": "html", ".htm": "html", ".zip": "zip"}
PROGRESS_EVERY_S = 2.0  # report: how often it says how far it got


def cmd_report(args: argparse.Namespace) -> int:
    """Run a workload (to its end, or --max-steps) and write the review pack: one HTML page, or a zip with it."""
    import os

    from pykv.lab.lab import Lab
    from pykv.review_pack import record_from_lab, render_html, run_pack
    from pykv.review_pack.bundle import bundle
    from pykv.review_pack.deep_link import public_root

    check_writable(args.out, "--out")
    for name in ("kaleido", "choreographer"):  # the image export's browser logs each start and exit at INFO
        logging.getLogger(name).setLevel(logging.WARNING)
    fmt = REPORT_FORMATS.get(os.path.splitext(args.out)[1].lower())
    if fmt is None:
        raise UsageError(
            f"--out {quoted(args.out)}: name an .html file (the page) or a .zip file (the page, "
            "figures as SVG and PNG, CSVs and the final snapshot)."
        )
    if not 1 <= args.max_steps <= MAX_STEPS:
        raise UsageError(
            f"--max-steps {args.max_steps} is out of range; a review pack covers 1 to {MAX_STEPS:,} "
            "steps (it keeps what it draws of every step)."
        )
    config = config_from_args(args)
    given = check_preset_flags(args, file_ok=True)
    workload = load_workload(args)
    if len(workload.requests) * args.max_steps > MAX_REPORT_REQUEST_STEPS:
        raise UsageError(
            f"a review pack keeps each request's counts at every step: {len(workload.requests):,} requests x "
            f"--max-steps {args.max_steps:,} is over its limit of {MAX_REPORT_REQUEST_STEPS:,}; lower --num-requests "
            "or --max-steps."
        )
    lab = Lab(config, workload=workload)
    lab.check_workload()  # a request the engine will refuse: say so now, not at its arrival step
    _check_history(lab, workload, args.max_steps)
    print(engine_header(lab.engine), file=sys.stderr)
    _replay_with_progress(lab, args.max_steps)
    note = (
        None
        if lab.engine_done()
        else (f"The run stopped after --max-steps {lab.head} with requests unfinished; the pack shows the steps run.")
    )
    record = record_from_lab(
        lab,
        preset=args.workload if args.workload in PRESETS else None,
        preset_args=given,
        seed=args.seed,
        note=note,
        lab_root=public_root(),  # no browser here: the host's address, if it set one
    )
    pack = run_pack(record)
    html = render_html(pack)
    data, problem = bundle(pack, html) if fmt == "zip" else (html, None)
    if problem:  # a zip without its figures is not what was asked for: say so and write nothing
        print(
            f"error: the zip's SVG/PNG figures could not be made: {problem} (an .html pack needs no image export)",
            file=sys.stderr,
        )
        return 1
    write_atomic(args.out, data)
    print(f"wrote {args.out} ({len(data) / 2**20:.1f} MiB, {lab.head} steps, {len(pack.figures())} figures)")
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return 0


def _check_history(lab, workload: Workload, steps: int) -> None:
    """Refuse a pack whose history would pass MAX_REPORT_HISTORY_BYTES (review_pack.history.history_estimate: the
    pool's views and every output token at the few steps drawn whole, a slim view per request per step)."""
    from pykv.engine.kv.sizing import engine_sizing
    from pykv.review_pack.history import history_estimate

    sizing = engine_sizing(lab.config, lab.loaded.config)
    blocks = sizing.num_gpu_blocks + sizing.num_cpu_blocks
    tokens = sum(r.max_tokens * r.n for r in workload.requests)
    need = history_estimate(len(workload.requests), steps, blocks, tokens)
    if need > MAX_REPORT_HISTORY_BYTES:
        raise UsageError(
            f"this review pack's history would hold about {need / 2**30:.1f} GiB ({blocks:,} blocks and "
            f"{tokens:,} output tokens at each of the few steps it draws whole, {len(workload.requests):,} requests "
            f"at each of {steps:,} steps), over its limit of {MAX_REPORT_HISTORY_BYTES / 2**30:g} GiB beside the "
            "engine's KV pool; lower --num-gpu-blocks, --max-tokens, --num-requests or --max-steps."
        )


def _replay_with_progress(lab, steps: int) -> None:
    """Step the lab to ``steps`` (or the run's end), saying on stderr every few seconds how far it got; the
    engine's stats and preemption lines go into the pack, not the terminal."""
    engine_log = logging.getLogger("pykv")
    level = engine_log.level
    engine_log.setLevel(logging.ERROR)
    try:
        _replay(lab, steps)
    finally:
        engine_log.setLevel(level)


def _replay(lab, steps: int) -> None:
    """One step at a time, the history slimmed to what the pack draws as it goes (review_pack/history.py)."""
    from pykv.review_pack.history import PackHistory

    history = PackHistory(lab.snapshots)
    start = said = time.perf_counter()
    while lab.head < steps and not lab.engine_done():
        before = lab.head
        lab.goto(before + 1)
        if lab.head == before:
            break
        history.observe()
        if time.perf_counter() - said >= PROGRESS_EVERY_S:
            said = time.perf_counter()
            print(f"step {lab.head:,} ({said - start:.0f} s)", file=sys.stderr, flush=True)


def _command(sub, name: str, text: str) -> argparse.ArgumentParser:
    """A sub-command whose --help opens with the line the command list shows."""
    return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m pykv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = _command(sub, "run", "run a workload, printing vLLM-style logs and a summary table")
    add_engine_flags(run, log_stats_interval=10)  # a run prints vLLM's periodic stats line, as vLLM does
    run.add_argument("--workload", default="storm", help=f"a preset ({', '.join(PRESETS)}) or a workload JSON file")
    run.add_argument("--num-requests", type=int, default=None, help="preset size")
    run.add_argument("--max-tokens", type=int, default=None, help="preset max_tokens per request")
    run.add_argument("--export-workload", default=None, help="write the workload as JSON to this path")
    run.add_argument("--max-steps", type=int, default=100_000)
    run.add_argument(
        "--serve-metrics",
        type=int,
        default=None,
        metavar="PORT",
        help="serve the engine's Prometheus metrics on http://HOST:PORT/metrics during the run",
    )
    run.add_argument("--metrics-host", default="127.0.0.1", help="the address --serve-metrics listens on")
    run.add_argument(
        "--linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep serving /metrics this long after the run (for a last scrape)",
    )
    run.set_defaults(func=cmd_run)
    add_sweep_parser(sub, _command)
    report = _command(
        sub,
        "report",
        "run a workload and write its review pack: one self-contained HTML page (or "
        "a zip with it, every figure as SVG and PNG, and the CSVs); the run's log lines go into the "
        "pack, progress to stderr; its link into the lab is a full address under PYKV_PUBLIC_URL when set "
        "(e.g. PYKV_PUBLIC_URL=https://lab.example.org), else relative",
    )
    add_engine_flags(report, log_stats_interval=10)  # the same flags and defaults as run
    report.add_argument("--workload", default="storm", help=f"a preset ({', '.join(PRESETS)}) or a workload JSON file")
    report.add_argument("--num-requests", type=int, default=None, help="preset size")
    report.add_argument("--max-tokens", type=int, default=None, help="preset max_tokens per request")
    report.add_argument(
        "--max-steps",
        type=int,
        default=MAX_STEPS,
        help=f"stop after this many steps (at most {MAX_STEPS:,}: the pack keeps every step)",
    )
    report.add_argument("--out", required=True, help="the pack: a .html file, or a .zip file")
    report.set_defaults(func=cmd_report)
    add_estimate_parser(sub)
    add_diagnose_parser(sub)
    add_attach_parser(sub)
    add_vllm_parser(sub)
    gen = _command(sub, "generate", "complete one prompt")
    add_engine_flags(gen)
    gen.add_argument("prompt")
    gen.add_argument("--max-tokens", type=int, default=48)
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.set_defaults(func=cmd_generate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; every error is one line on stderr (``error: ...``): exit code 2 for bad input (flags,
    config, workload file), 1 for a run that failed, never a traceback. argparse's own errors exit 2."""
    try:
        args = build_parser().parse_args(argv)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(SafeFormatter("%(levelname)s %(asctime)s [%(name)s] %(message)s", "%m-%d %H:%M:%S"))
        logging.basicConfig(level=logging.INFO, handlers=[handler])
        return args.func(args)
    except ValueError as e:  # UsageError, ConfigError, pydantic's ValidationError, the engine's input checks
        _report(one_line(e))
        return USAGE
    except KeyboardInterrupt:
        _report("interrupted")
        return INTERRUPTED
    except MemoryError:
        _report("out of memory; use a smaller pool, workload or sweep")
        return FAILURE
    except WriteFailed as e:  # a full disk, a file-size limit: the old file is kept, and the message says so
        _report(str(e.strerror))
        return FAILURE
    except Exception as e:  # the last line of defence: one line, never a traceback
        _report(f"{type(e).__name__}: {one_line(e)}")
        return FAILURE


def _report(text: str) -> None:
    print(terminal_safe(f"error: {text}"), file=sys.stderr, flush=True)
