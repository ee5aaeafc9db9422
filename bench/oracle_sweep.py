"""Random workloads from seeds, per vLLM profile, through pykv and vLLM's own scheduler (oracle/); prints
matched / diverged per profile with each divergence's first difference and seed.

    python -m bench.oracle_sweep [--seeds 50] [--first-seed 0] [--profiles v0.6 v0.10 v0.33]
                                 [--normalise batch_as_set] [--save]

Needs the venvs of ``python oracle/build_venvs.py``. ``--normalise`` (named, off by default) hides the known
deliberate differences (oracle/compare.py NORMALISATIONS); a name that does not apply to a profile is ignored
there. ``--save`` writes bench/results/<date>-cpu-oracle-sweep.txt (with every profile; a subset adds their names,
e.g. <date>-cpu-oracle-sweep-v0.10-v0.33.txt).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import sys
import time
from pathlib import Path

from oracle import cases, harness
from oracle.compare import NORMALISATIONS

APPLIES = {"batch_as_set": ("v0.6",)}


def main() -> int:
    ap = argparse.ArgumentParser(description="pykv vs vLLM's schedulers on random workloads.")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--profiles", nargs="+", default=list(cases.PROFILES), choices=cases.PROFILES)
    ap.add_argument("--normalise", nargs="*", default=[], choices=sorted(NORMALISATIONS))
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    missing = harness.missing_venvs(args.profiles)
    if missing:
        print(f"the oracle's vLLM venvs are missing ({', '.join(missing)}): run python oracle/build_venvs.py")
        return 2
    t0 = time.perf_counter()
    batch = []
    for profile in args.profiles:
        norm = [n for n in args.normalise if profile in APPLIES[n]]
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            case = cases.random_case(profile, seed)
            batch.append(dataclasses.replace(case, normalise=norm) if norm else case)
    results = harness.run_both(batch)
    lines = [
        f"oracle sweep {datetime.date.today()}: {args.seeds} seeds from {args.first_seed}, normalise="
        f"{args.normalise or 'none'}; pykv vs vLLM 0.6.3.post1 / 0.10.2 / 0.33.0 schedulers (CPU)"
    ]
    for profile in args.profiles:
        mine = [r for r in results.values() if r.case.startswith(profile + "/")]
        diverged = [r for r in mine if not r.matched]
        kinds = collections.Counter(r.first.kind for r in diverged)
        lines.append(
            f"{profile} (vLLM {harness.RELEASE_OF[profile]}): {len(mine) - len(diverged)} matched, "
            f"{len(diverged)} diverged" + (f" (first divergence by kind: {dict(kinds)})" if kinds else "")
        )
        for r in diverged:
            lines.append(f"  {r.summary()[:400]}")
    lines.append(f"({time.perf_counter() - t0:.0f} s)")
    text = "\n".join(lines)
    print(text)
    if args.save:
        subset = "" if set(args.profiles) == set(cases.PROFILES) else "-" + "-".join(args.profiles)
        out = Path(__file__).resolve().parent / "results" / f"{datetime.date.today()}-cpu-oracle-sweep{subset}.txt"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text + "\n")
        print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
