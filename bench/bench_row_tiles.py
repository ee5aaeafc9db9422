"""What the engine pays for batch-invariant linear layers (pykv/engine/model/row_stable_linear.py) on a CPU.

    python -m bench.bench_row_tiles            # prints; --save writes bench/results/<date>-cpu-row-tiles.txt

Per shape of the shipped model and rows per call: one plain ``F.linear`` (MKL picks its kernel by the row
count) against the fixed-height tiles; then a storm run to completion with each, and whether their tokens
agree with the same requests run one at a time.
"""

from __future__ import annotations

import argparse
import datetime
import io
import logging
import time
from contextlib import nullcontext, redirect_stdout
from pathlib import Path
from unittest import mock

import torch
from torch.nn import functional

from pykv import EngineConfig
from pykv.border.workload import make_workload
from pykv.engine.model import row_stable_linear as rsl
from pykv.engine.model.loader import load_model
from pykv.lab.completed_run import run_to_completion

SHAPES = {
    "q_proj": (256, 256),
    "k_proj": (256, 64),
    "gate_proj": (256, 704),
    "down_proj": (704, 256),
    "lm_head": (256, 4096),
}
ROWS = (1, 2, 8, 64, 512)


def _time(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def layers() -> None:
    print(f"{'layer':10} {'in x out':>10} " + " ".join(f"{'rows ' + str(r):>17}" for r in ROWS))
    with torch.inference_mode():
        for name, (k, n) in SHAPES.items():
            weight = torch.randn(n, k)
            cells = []
            for rows in ROWS:
                x = torch.randn(rows, k)
                plain = _time(lambda: functional.linear(x, weight), 30)
                tiled = _time(lambda: rsl.row_stable_linear(x, weight), 30)
                cells.append(f"{plain * 1e6:6.0f}/{tiled * 1e6:6.0f} us")
            print(f"{name:10} {f'{k}x{n}':>10} " + " ".join(f"{c:>17}" for c in cells))
    print("(plain F.linear / fixed tiles of", rsl.ROWS_PER_TILE, "rows)")


def runs() -> None:
    loaded = load_model("tiny", "cpu", "float32")
    workload = make_workload("storm", n=8, max_tokens=64)
    alone = [
        run_to_completion(EngineConfig(num_gpu_blocks=256), workload.model_copy(update={"requests": [r]}), loaded)
        .outputs[0]
        .output_token_ids
        for r in workload.requests
    ]
    for label, patch in (("fixed tiles", None), ("plain F.linear", functional.linear)):
        with mock.patch.object(rsl, "row_stable_linear", patch) if patch else nullcontext():
            start = time.perf_counter()
            run = run_to_completion(EngineConfig(num_gpu_blocks=24), workload, loaded)
            seconds = time.perf_counter() - start
        tokens = [o.output_token_ids for o in run.outputs]
        same = sum(t == a for t, a in zip(tokens, alone))
        print(
            f"storm 8 x 64 at 24 blocks, {label:14}: {seconds:6.2f} s, {run.totals().preemptions} preemptions, "
            f"{same}/{len(alone)} requests' tokens equal their solo run"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.getLogger("pykv").setLevel(logging.ERROR)
    out = io.StringIO()
    with redirect_stdout(out):
        layers()
        print()
        runs()
    print(out.getvalue(), end="")
    if args.save:
        path = Path(__file__).parent / "results" / f"{datetime.date.today()}-cpu-row-tiles.txt"
        path.write_text(f"$ python -m bench.bench_row_tiles\n{out.getvalue()}")
        print("saved", path)


if __name__ == "__main__":
    main()
