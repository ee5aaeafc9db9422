"""``python -m pykv diagnose``: read what your own vLLM printed and scraped, say what is wrong in the course's
terms, replay the same pressure in the lab, and keep a baseline.

    python -m pykv diagnose vllm.log [metrics.txt trace.jsonl ...]
    python -m pykv diagnose --prometheus http://127.0.0.1:9090 --since 2h
    python -m pykv diagnose vllm.log --json [--replay-out replay.json --what-if --out report.html]
    python -m pykv diagnose vllm.log --replay-out replay.json --what-if --gpu H100-SXM --model llama-3.1-8b
    python -m pykv diagnose vllm.log --save-baseline before.json
    python -m pykv diagnose new.log --baseline before.json

Nothing leaves the machine; every figure is read from the files, measured in the lab, or labelled modelled.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from pykv.border.config import EngineConfig, knobs
from pykv.bridge import Diagnosis, compare, diagnose, fetch_range, load_baseline, save_baseline
from pykv.bridge.logs.engines import engine_lines, pool_label
from pykv.cli.errors import UsageError, check_writable
from pykv.cli.output import write_atomic
from pykv.cli.terminal import terminal_safe
from pykv.gpu_model import DEFAULT_TARGET, GPUS, MODELS, Target


def add_parser(sub) -> None:
    p = sub.add_parser(
        "diagnose",
        help="read a vLLM server's logs, metrics or traces: release, timeline, findings, a lab replay, a baseline",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "files",
        nargs="*",
        help="vLLM log text (plain or .gz), /metrics bodies, request traces "
        "(Azure, BurstGPT, Mooncake/Bailian JSONL, vLLM bench custom JSONL)",
    )
    p.add_argument(
        "--prometheus",
        default=None,
        metavar="URL",
        help="a Prometheus server that scrapes vLLM, "
        "e.g. http://127.0.0.1:9090 (its vllm: series stand in for metrics files)",
    )
    p.add_argument("--since", default="2h", help="with --prometheus: how far back, e.g. 30m, 2h, 1d")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the diagnosis as JSON (the documented contract); with --replay-out, --what-if or --out, "
        "their results too (keys replay, what_if, review_pack), and what they say on stderr",
    )
    p.add_argument("--baseline", default=None, metavar="OLD.json", help="compare with a saved baseline")
    p.add_argument("--save-baseline", default=None, metavar="NEW.json", help="save this diagnosis as a baseline")
    p.add_argument(
        "--replay-out",
        default=None,
        metavar="WORKLOAD.json",
        help="write the lab replay's workload (run it with the printed `python -m pykv run` command)",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="REPORT.html",
        help="write the review pack: one offline HTML page "
        "(release, timeline, findings, the lab replay, and the what-if with --what-if)",
    )
    p.add_argument(
        "--what-if",
        action="store_true",
        help="run the replay, and again with the suggested fix, and print both (takes seconds to a minute on a CPU)",
    )
    p.add_argument("--gpu", default="H100-SXM", help=f"the modelled GPU for --what-if: {', '.join(GPUS)}")
    p.add_argument(
        "--model",
        default=None,
        help=f"the modelled model for --what-if: {', '.join(MODELS)} (default: the model the log names, where the "
        "catalogue has it, else llama-3.1-8b)",
    )
    p.set_defaults(func=cmd_diagnose)


def cmd_diagnose(args: argparse.Namespace) -> int:
    if not args.files and not args.prometheus:
        raise UsageError("give at least one file (a vLLM log, a /metrics body or a trace) or --prometheus URL")
    for path, flag in ((args.save_baseline, "--save-baseline"), (args.replay_out, "--replay-out"), (args.out, "--out")):
        check_writable(path, flag)
    if args.gpu not in GPUS or (args.model is not None and args.model not in MODELS):
        raise UsageError(f"--gpu must be one of {', '.join(GPUS)} and --model one of {', '.join(MODELS)}")
    baseline = load_baseline(args.baseline) if args.baseline else None  # a bad baseline refused before any work
    live = fetch_range(args.prometheus, last=args.since) if args.prometheus else None
    diagnosis = diagnose([Path(f) for f in args.files], live_metrics=live)  # a path, never read as pasted text
    if args.save_baseline:
        save_baseline(diagnosis, args.save_baseline)
    # --json: stdout is the JSON alone; what the replay says goes to stderr, its results into the JSON
    say = (lambda text: print(terminal_safe(text), file=sys.stderr)) if args.json else _print
    body = diagnosis.to_json_dict()
    if not args.json:
        say("\n".join(describe(diagnosis)))
    if baseline is not None:
        comparison = compare(diagnosis, baseline)
        body["baseline"] = comparison.verdict  # an addition to the contract's keys
        body["baseline_details"] = comparison.lines()
        if not args.json:
            say(f"\nbaseline {args.baseline}: {comparison.verdict}\n" + "\n".join(comparison.details()))
    if args.save_baseline and not args.json:
        say(f"\nsaved the baseline {args.save_baseline}")
    if args.replay_out or args.what_if or args.out:
        body |= _replay(diagnosis, args, say)
    if args.json:
        print(json.dumps(body, indent=2, allow_nan=False))
    return 0


def _print(text: str) -> None:
    print(terminal_safe(text))


def describe(d: Diagnosis) -> list[str]:
    """The diagnosis as a person reads it: release, what it can show, start-up, timeline, findings."""
    lines = [f"release: {d.release.text}", *[f"  - {note}" for note in d.visibility]]
    for i, fact in enumerate(d.startup, 1):
        parts = [
            f"{fact.num_gpu_blocks:,} {pool_label(fact.device)}" if fact.num_gpu_blocks else None,
            f"{fact.num_cpu_blocks:,} CPU blocks" if fact.num_cpu_blocks else None,
            f"block size {fact.block_size}" if fact.block_size else None,
            f"{fact.kv_cache_tokens:,} KV tokens" if fact.kv_cache_tokens else None,
            f"max concurrency {fact.max_concurrency:.2f}x" if fact.max_concurrency is not None else None,
            "START-UP FAILED: max_model_len exceeds the KV cache" if fact.startup_error else None,
        ]
        whose = f" (engine {fact.engine})" if fact.engine is not None else ""
        lines.append(f"start-up {i}{whose}: " + (", ".join(p for p in parts if p) or "(no capacity figures)"))
    s = d.samples
    if s:
        peak = max((x.gpu_kv_usage for x in s if x.gpu_kv_usage is not None), default=None)
        lines.append(
            (
                f"timeline: 1 sample ({s[0].time or 'untimed'}): running "
                if len(s) == 1
                else f"timeline: {len(s)} samples ({s[0].time or 'untimed'} .. {s[-1].time or 'untimed'}): running "
            )
            + f"up to {max((x.running or 0) for x in s)}, waiting up to {max((x.waiting or 0) for x in s)}"
            + (f", GPU KV usage up to {peak:.1%}" if peak is not None else "")
        )
        lines += engine_lines(d.engine_samples)
    lines.append(f"preemptions: {d.preemption_text}")
    lines.append(f"read {d.lines_read:,} lines, skipped {d.lines_skipped:,} it does not know")
    lines += [f"note: {n}" for n in d.notes]
    if not d.findings:
        unseen = "" if d.preemptions_counted else f" (preemptions: {d.preemption_state})"
        lines.append(f"findings: none: nothing here looks like KV-cache trouble{unseen}")
    for f in d.findings:
        lines += [
            f"\n[{f.confidence}] {f.id}: {f.title}",
            f"  why {f.confidence}: {f.why}",
            *[f"  evidence: {e}" for e in f.evidence[:5]],
            f"  fix (vLLM's tuning order): {f.fix}",
        ]
    return lines


def cli_flags(config: EngineConfig) -> str:
    """The `python -m pykv run` flags that differ from the defaults."""
    words = []
    for spec in knobs("cli"):
        value = getattr(config, spec.name)
        if value != spec.default:
            flag = "--" + spec.name.replace("_", "-")
            words += [flag] if value is True and spec.kind == "bool" else [flag, str(value)]
    return " ".join(words)


def _replay(diagnosis: Diagnosis, args: argparse.Namespace, say: Callable[[str], None]) -> dict:
    """Plan the replay, write it (--replay-out), run the what-if (--what-if), write the pack (--out); say each step,
    and return what --json adds: the replay's plan and the what-if's rows."""
    from pykv.engine.model.loader import load_model
    from pykv.lab.server_replay import plan_replay
    from pykv.lab.server_scale import at_server_scale
    from pykv.lab.target_from_log import log_model
    from pykv.lab.what_if import WHAT_IF_ROWS, suggested_fixes, what_if

    logging.getLogger("pykv").setLevel(logging.ERROR)  # the replay's own vLLM-style lines are not what was asked
    loaded = load_model("tiny", "cpu", "float32")
    plan = plan_replay(diagnosis, loaded.config.vocab_size)
    added: dict = {"replay": {"profile": plan.profile_reason, "keeps": plan.keeps, "cannot_keep": plan.cannot_keep}}
    say(f"\nreplay in the lab ({plan.profile_reason}):")
    say("  keeps: " + "; ".join(plan.keeps))
    say("  cannot keep: " + "; ".join(plan.cannot_keep))
    if args.replay_out:
        write_atomic(args.replay_out, plan.workload.to_json().encode())
        command = f"python -m pykv run --workload {args.replay_out} {cli_flags(plan.config)}"
        added["replay"] |= {"workload": args.replay_out, "command": command}
        say(f"  run it: {command}")
    fixes, outcomes, priced = suggested_fixes(diagnosis, plan), [], None
    if args.what_if and not fixes:
        say("  what-if: no fix in the tuning order applies to this replay")
        added["what_if"] = {"fixes": [], "outcomes": []}
    elif args.what_if:
        found = log_model(diagnosis.config.model)
        target = Target(args.gpu, args.model or found.catalogue or DEFAULT_TARGET.model)
        if args.model is None:
            say(f"  model: {found.note()}" + ("" if found.catalogue else f"; priced as {target.model} (--model)"))
        outcomes, priced = what_if(plan, fixes, loaded, target), target.estimate()
        at_scale = [at_server_scale(fix, plan, diagnosis, priced) for fix in fixes]
        added["what_if"] = {
            "fixes": [fix.label for fix in fixes],
            "at_server_scale": at_scale,
            "outcomes": [asdict(o) for o in outcomes],
        }
        say(f"  what-if (throughput {outcomes[0].target_label}):")
        for i, (fix, scaled) in enumerate(zip(fixes, at_scale), 1):
            say(f"    fix {i}: in the lab {fix.label}\n           on your server: {scaled}")
        heads = ["as planned"] + [f"fix {i}" for i in range(1, len(fixes) + 1)]
        say("  " + " " * 20 + "".join(f"{h:>14}" for h in heads))
        for label, field, fmt in WHAT_IF_ROWS:
            say(f"  {label:20}" + "".join(f"{fmt.format(getattr(o, field)):>14}" for o in outcomes))
        if not all(o.done for o in outcomes):
            print("  (a run stopped at its step limit before finishing)", file=sys.stderr)
    if args.out:
        from pykv.review_pack.page import render_html
        from pykv.review_pack.server import server_pack

        data = render_html(server_pack(diagnosis, plan, fixes, outcomes, priced))
        write_atomic(args.out, data)
        added["review_pack"] = args.out
        say(f"\nwrote {args.out} ({len(data) / 2**20:.1f} MiB)")
    return added
