"""Do the torch and the interpreted Triton attention backends run the same history? Every preset to its end at
two pool sizes on the shipped model, on torch, on Triton on every layer (``"triton"``) and as the lab runs on a CPU
(``"auto"``: Triton on layer 0, torch on the others), comparing after every step what the lab shows: the queues,
each request's status, tokens and block table, each block's reference count, owners and hash, and the preemptions.

    python -m bench.backend_parity [--blocks 64,24] [--save bench/results/<date>-cpu-backend-parity.txt]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ["PYKV_STEPWISE_CPU_BACKEND"] = "triton"  # "auto" on a CPU for a stepwise engine: interpreted Triton

from pykv.engine.model.attention import prepare_stepwise_attention

prepare_stepwise_attention()  # before the model load imports triton

from pykv.border.runtime import configure_torch_threads  # noqa: E402
from pykv.border.workload import PRESETS  # noqa: E402
from pykv.engine.model.loader import load_model  # noqa: E402
from pykv.lab.lab import Lab, lab_config  # noqa: E402


def history(loaded, preset: str, backend: str, blocks: int) -> tuple[list[tuple], str]:
    """What the lab shows after every step of ``preset`` run to its end, and the backend's label."""
    lab = Lab(lab_config(model="tiny", attention_backend=backend, num_gpu_blocks=blocks), loaded, preset)
    shown = []
    while lab.step():
        s = lab.view
        shown.append(
            (
                s.queues,
                [(r.request_id, r.status, tuple(r.output_token_ids), r.block_table) for r in s.requests],
                [(b.block_id, b.ref_cnt, b.owners, b.block_hash) for b in s.blocks],
                [(p.request_id, p.mode, p.num_blocks) for p in s.preemptions],
            )
        )
    return shown, lab.engine.backend.label


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", default="64,24", help="comma-separated device pool sizes")
    ap.add_argument("--save", type=Path, help="append the table to this results file")
    args = ap.parse_args()
    configure_torch_threads()
    loaded = load_model("tiny")
    lines = [f"{'preset':14s} {'blocks':>6s} {'steps':>6s}  result"]
    for preset in PRESETS:
        for blocks in (int(b) for b in args.blocks.split(",")):
            t0 = time.perf_counter()
            torch_run, _ = history(loaded, preset, "torch", blocks)
            results = []
            for backend in ("triton", "auto"):  # every layer on the kernels; the lab's CPU default (layer 0)
                run, label = history(loaded, preset, backend, blocks)
                differs = next((i + 1 for i, (a, b) in enumerate(zip(torch_run, run)) if a != b), None)
                if differs is None and len(torch_run) != len(run):
                    differs = min(len(torch_run), len(run)) + 1
                results.append(f"{'identical' if differs is None else f'DIFFER from step {differs}'} ({label})")
            lines.append(
                f"{preset:14s} {blocks:6d} {len(torch_run):6d}  torch vs "
                + "; vs ".join(results)
                + f" ({time.perf_counter() - t0:.0f} s)"
            )
            print(lines[-1], flush=True)
    if args.save:
        with open(args.save, "a") as f:
            f.write(f"$ python {' '.join(sys.argv)}\n# {time.strftime('%Y-%m-%d %H:%M')} · shipped model\n")
            f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
