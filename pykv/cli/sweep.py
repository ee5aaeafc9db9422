"""``python -m pykv sweep``: a workload preset over pool sizes (or block sizes, or max_num_seqs), once per series (a
mode under one vLLM release: --vllm-profile, v0.6 by default, the release that has both recompute and swap), each
point --repeats times; the counts once, each time as the median of its repeats with its spread, on the engine
thread's CPU clock and the wall clock, and the machine's load while it ran.

    python -m pykv sweep                                            # recompute vs swap under vLLM 0.6.3 (V0)
    python -m pykv sweep --modes recompute,swap,auto --repeats 5
    python -m pykv sweep --modes recompute,swap,recompute@v0.33 --compare-across-releases   # V1's recompute too
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from pykv.border.config import ConfigError
from pykv.border.csv_safe import csv_text
from pykv.border.preemption_choices import POLICY_LABELS
from pykv.border.timing_measures import NOISY_SPREAD, is_noisy
from pykv.border.workload import PRESETS, preset_defaults
from pykv.cli.errors import UsageError, check_writable, quoted
from pykv.cli.flags import add_engine_flags, check_preset_flags, config_from_args
from pykv.cli.output import write_atomic
from pykv.lab.sweep.series import MODES
from pykv.lab.sweep.spec import (
    DEFAULT_MODES,
    DEFAULT_PROFILE,
    DEFAULT_REPEATS,
    DEFAULT_VALUES,
    DEFAULT_WORKLOAD,
    MAX_REPEATS,
)

AXIS_FLAGS = (
    ("--pool-sizes", "num_gpu_blocks", "pool_sizes"),
    ("--block-sizes", "block_size", "block_sizes"),
    ("--max-num-seqs-values", "max_num_seqs", "max_num_seqs_values"),
)
TABLE = [  # (column, header): counts, then each time's median and spread, CPU clock first
    ("series", "series"),
    ("value", None),
    ("preemptions", "preemptions"),
    ("recomputed_tokens", "recomputed_tokens"),
    ("swapped_bytes", "swapped_bytes"),
    ("cpu_s", "cpu_s"),
    ("cpu_spread", "±cpu"),
    ("wall_s", "wall_s"),
    ("wall_spread", "±wall"),
    ("recompute_cpu_s", "recompute_cpu_s"),
    ("swap_cpu_s", "swap_cpu_s"),
    ("modelled_pcie_gen5_s", "modelled_pcie_gen5_s"),
]


def add_parser(sub, command) -> None:
    """The sweep sub-command; ``command(sub, name, text)`` makes it as main's other commands are made."""
    sweep = command(sub, "sweep", "run a workload over pool sizes (or block sizes, max_num_seqs) per mode")
    add_engine_flags(sweep, vllm_profile=DEFAULT_PROFILE)  # the release that has both recompute and swap
    axis = sweep.add_mutually_exclusive_group()
    values = ",".join(map(str, DEFAULT_VALUES))
    axis.add_argument(
        "--pool-sizes", default=None, help=f"device pool sizes in blocks, e.g. 16:128:16 (default {values})"
    )
    axis.add_argument("--block-sizes", default=None, help="block sizes at a fixed pool capacity, e.g. 4,8,16,32")
    axis.add_argument("--max-num-seqs-values", default=None, help="max_num_seqs values, e.g. 2,4,8,16")
    sweep.add_argument(
        "--modes",
        default=",".join(DEFAULT_MODES),
        help=f"comma list of modes, each run under --vllm-profile: {', '.join(MODES)}; MODE@PROFILE runs one on "
        "another release (recompute@v0.33: V1's recompute), which needs --compare-across-releases",
    )
    sweep.add_argument(
        "--compare-across-releases",
        action="store_true",
        help="allow MODE@PROFILE series on other releases than --vllm-profile (each series is named with its release)",
    )
    sweep.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        help=f"runs per point: times are their median, with the fastest and slowest (1 to {MAX_REPEATS}; "
        f"default {DEFAULT_REPEATS}); counts are the same every repeat",
    )
    sweep.add_argument(
        "--policies",
        default=None,
        help="comma list of victim policies to run each mode with: "
        f"{', '.join(POLICY_LABELS)} (default: --preemption-victim)",
    )
    sized = ", ".join(f"{k}={v}" for k, v in preset_defaults(DEFAULT_WORKLOAD).items())
    sweep.add_argument(
        "--workload",
        default=DEFAULT_WORKLOAD,
        help=f"a preset: {', '.join(PRESETS)} (default {DEFAULT_WORKLOAD}: {sized})",
    )
    sweep.add_argument("--num-requests", type=int, default=None, help="preset size (default: the preset's own)")
    sweep.add_argument(
        "--max-tokens", type=int, default=None, help="preset max_tokens per request (default: the preset's)"
    )
    sweep.add_argument("--out", default=None, help="write the runs as CSV")
    sweep.set_defaults(func=cmd_sweep)


def _spec(args: argparse.Namespace):
    from pykv.lab.sweep import SweepSpec, parse_values

    flag, axis, text = next(
        ((f, a, getattr(args, name)) for f, a, name in AXIS_FLAGS if getattr(args, name) is not None),
        ("--pool-sizes", "num_gpu_blocks", ",".join(map(str, DEFAULT_VALUES))),
    )
    if args.workload not in PRESETS:
        raise UsageError(
            f"sweep runs a preset workload ({', '.join(PRESETS)}), not {quoted(args.workload)}; "
            "to run a workload JSON file use: python -m pykv run --workload FILE."
        )
    given = check_preset_flags(args, file_ok=False)
    modes = tuple(m.strip() for m in args.modes.split(","))
    if not all(modes):
        raise UsageError(f"--modes {quoted(args.modes)} has an empty entry; give a comma list of: {', '.join(MODES)}.")
    if not 1 <= args.repeats <= MAX_REPEATS:
        raise UsageError(f"--repeats {args.repeats} is out of range; use 1 to {MAX_REPEATS}.")
    try:
        values = parse_values(text)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None
    base = config_from_args(args)
    policies = (
        (base.preemption_victim,) if args.policies is None else tuple(p.strip() for p in args.policies.split(","))
    )
    bad = [p for p in policies if p not in POLICY_LABELS]
    if bad:
        raise UsageError(
            f"--policies: unknown policy {quoted(bad[0])}; give a comma list of: {', '.join(POLICY_LABELS)}."
        )
    spec = SweepSpec(
        workload=args.workload,
        workload_args=given,
        seed=args.seed,
        axis=axis,
        values=values,
        modes=modes,
        base=base,
        policies=policies,
        repeats=args.repeats,
        across_releases=args.compare_across_releases,
    )
    try:
        spec.configs()  # every run's config, validated before the model loads
    except ConfigError as e:
        if e.field != axis:
            raise
        raise UsageError(f"{flag}: {e}") from None
    return spec


def cmd_sweep(args: argparse.Namespace) -> int:
    import pandas as pd

    from pykv.border.runtime import configure_torch_threads
    from pykv.lab.sweep import run_sweep

    check_writable(args.out, "--out")
    spec = _spec(args)
    logging.getLogger("pykv").setLevel(logging.ERROR)  # a sweep's preemption warnings would drown the table
    configure_torch_threads()  # the Sweep page's thread policy, so their timings compare

    def progress(done: int, total: int, row: dict) -> None:
        bar = "#" * (20 * done // total)
        print(
            f"\r[{bar:<20}] {done}/{total}  {row['series']:>30} {spec.axis}={row['value']:<5} "
            f"{row['preemptions']:>4} preemptions  {row['cpu_s']:.2f} s CPU",
            end="",
            file=sys.stderr,
            flush=True,
        )

    t0 = time.perf_counter()
    print(f"{spec.num_points} points x {spec.repeats} repeats: {spec.workload_text()}", file=sys.stderr)
    try:
        result = run_sweep(spec, on_progress=progress)
    except BaseException:
        print(file=sys.stderr)  # end the progress line, so the error gets its own
        raise
    print(f"\n{len(result.runs)} points ({spec.num_runs} runs) in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    runs = result.runs.copy()
    for measure, column in (("cpu", "cpu_s"), ("wall", "wall_s")):
        spread = (runs[f"{column}_hi"] - runs[f"{column}_lo"]) / runs[column]
        runs[f"{measure}_spread"] = [f"{s:.0%}" + (" !" if s > NOISY_SPREAD else "") for s in spread]
    headers = {c: h or spec.axis for c, h in TABLE}
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(runs[[c for c, _ in TABLE]].rename(columns=headers).to_string(index=False))
    print(_footer(spec, result.runs))
    if args.out:
        write_atomic(args.out, csv_text(result.runs).encode())
        print(f"wrote {args.out}")
    return 0


def _footer(spec, runs) -> str:
    """What the table's numbers are: counted, measured (on which clock, how many repeats), or modelled."""
    loads = runs["load_1m"].dropna()
    load = f"{loads.min():.2f}-{loads.max():.2f}" if len(loads) else "unknown"
    noisy = sum(is_noisy(r[f"{c}_lo"], r[f"{c}_hi"], r[c]) for _, r in runs.iterrows() for c in ("cpu_s", "wall_s"))
    return "\n".join(
        [
            f"device: {spec.base.device} (measured). Counts are the same every repeat; each time is the median of "
            f"{spec.repeats} runs, ± the slowest minus the fastest over the median (! over {NOISY_SPREAD:.0%}: "
            f"{noisy} flagged).",
            "cpu_s: CPU time of the engine thread (time.thread_time); wall_s: wall time; the CSV has every time "
            "on both clocks with its fastest and slowest repeat (_lo, _hi).",
            f"load average (1 min) while it ran: {load} on {_cpus()} CPUs. modelled_pcie_* columns are modelled, "
            "not measured.",
        ]
    )


def _cpus() -> str:
    return str(os.cpu_count() or "?")
