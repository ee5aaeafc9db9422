"""The GPU cost model against published measurements: each point's prediction, its error, the median
and the worst absolute error, and the shape of the vLLM paper's Figure 19(a).

    python -m bench.gpu_model_validation                # the table, with the shipped calibration
    python -m bench.gpu_model_validation --markdown     # the same as a Markdown table (the manual's)
    python -m bench.gpu_model_validation --fit          # refit the "fitted" calibration entries and print them

Goal (issue 18): median absolute error <= 20%, no point off by more than 1.6x. The link figures are the
link model's own inputs and the NIM points were not used in the fit (held out); both are reported apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys

from pykv.gpu_model import estimate
from pykv.gpu_model.calibration import CALIBRATION, Calibration
from pykv.gpu_model.published import POINTS, SOURCES, Point, predict

FITTED = ("gemm_efficiency_fp8", "gemm_half_tokens", "step_overhead_us", "layer_overhead_us")
BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def error(point: Point, calibration: Calibration = CALIBRATION) -> float:
    return predict(point, calibration) / point.published - 1


def table(markdown: bool) -> list[str]:
    rows = []
    for p in POINTS:
        pred, err = predict(p), error(p)
        tag = "input" if p.input else ("held out" if not p.fitted and p.source == "nim" else "")
        cells = [
            p.source,
            f"{p.gpu} + {p.model} ({p.dtype}{f', TP{p.tp}' if p.tp > 1 else ''})",
            p.note,
            f"{p.published:g} {p.unit}",
            f"{pred:.3g} {p.unit}",
            f"{err * 100:+.0f}%",
            tag,
        ]
        rows.append(cells)
    if markdown:
        out = ["| source | target | what | published | modelled | error | |", "|---|---|---|---:|---:|---:|---|"]
        return out + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]


def summary() -> list[str]:
    def stats(points) -> str:
        errs = [abs(error(p)) for p in points]
        worst = max(points, key=lambda p: abs(math.log(predict(p) / p.published)))
        factor = max(predict(worst) / worst.published, worst.published / predict(worst))
        return (
            f"{len(errs)} points: median |error| {statistics.median(errs) * 100:.1f}%, worst "
            f"{max(errs) * 100:.1f}% ({factor:.2f}x: {worst.source} {worst.gpu} {worst.model} {worst.note})"
        )

    return [
        f"all          {stats(POINTS)}",
        f"predictions  {stats([p for p in POINTS if not p.input])}  (link inputs left out)",
        f"held out     {stats([p for p in POINTS if p.source == 'nim'])}  (not used in the fit)",
    ]


def figure_19a() -> list[str]:
    """The shape of the vLLM paper's Fig. 19(a): swap (out + in, one copy per block) falls with the block
    size, recompute stays flat, and recompute costs at most ~20% of swap at block size 1."""
    est = estimate("A100-40GB-SXM", "opt-13b", "fp16")
    recompute = est.prefill_ms(256)
    lines = [
        f"Fig. 19(a), modelled: OPT-13B, 256 tokens = {256 * est.kv_bytes_per_token / 1e6:.1f} MB of KV, "
        f"A100-40GB, recompute {recompute:.1f} ms at every block size"
    ]
    swaps = {}
    for bs in BLOCK_SIZES:
        blocks = 256 // bs
        swaps[bs] = sum(est.kv_copy_ms(256, d, blocks, per_block=True) for d in ("d2h", "h2d"))
        lines.append(
            f"  block size {bs:>3}: swap out + in {swaps[bs]:7.1f} ms ({blocks * est.shape.layers * 2:,} "
            f"copies each way)   recompute / swap {recompute / swaps[bs]:.2f}"
        )
    cheaper = [bs for bs in BLOCK_SIZES if swaps[bs] < recompute]
    checks = [
        ("swap falls as the block size grows", all(swaps[a] > swaps[b] for a, b in zip(BLOCK_SIZES, BLOCK_SIZES[1:]))),
        ("recompute <= 20% of swap at block size 1 (as issue 18 reads the figure)", recompute <= 0.2 * swaps[1]),
        ("recompute within the paper's 20-40 ms band x 1.6", 20 / 1.6 <= recompute <= 40 * 1.6),
        (
            f"swap cheaper than recompute from block size {cheaper[0] if cheaper else '-'} (paper: at large blocks)",
            bool(cheaper) and cheaper[-1] == BLOCK_SIZES[-1],
        ),
    ]
    tflop = 2 * est.shape.layer_params * 256 / 1e12
    floor = tflop / est.gpu.tflops["16bit"] * 1e3
    lines += [f"  {'PASS' if ok else 'FAIL'}  {what}" for what, ok in checks]
    lines.append(
        f"  (a 256-token OPT-13B prefill is {tflop:.2f} TFLOP of weight GEMMs: {floor:.1f} ms at 100% of the "
        f"A100's peak; 20% of 135 ms = 27 ms would need {floor / 27 * 100:.0f}% of peak, so the model, at "
        "~50%, cannot reach it)"
    )
    return lines


def nelder_mead(f, x0: list[float], steps: int = 3000, scale: float = 0.3) -> list[float]:
    """Minimise f from x0 (a plain Nelder-Mead: reflect, expand, contract, shrink)."""
    n = len(x0)
    simplex = [list(x0)] + [[x + (scale if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(steps):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        centre = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]

        def along(t: float) -> list[float]:
            return [c + t * (w - c) for c, w in zip(centre, simplex[-1])]

        reflected = along(-1.0)
        fr = f(reflected)
        if fr < values[0]:
            expanded = along(-2.0)
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = along(0.5)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                simplex = [simplex[0]] + [[b + 0.5 * (x - b) for b, x in zip(simplex[0], s)] for s in simplex[1:]]
                values = [values[0]] + [f(s) for s in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def fit() -> Calibration:
    points = [p for p in POINTS if p.fitted]

    def calibration(x: list[float]) -> Calibration:
        return dataclasses.replace(CALIBRATION, **{name: math.exp(v) for name, v in zip(FITTED, x)})

    def loss(x: list[float]) -> float:
        c = calibration(x)
        if not 0 < c.gemm_efficiency_fp8 <= 1:
            return 1e9
        return sum(math.log(predict(p, c) / p.published) ** 2 for p in points) / len(points)

    x = nelder_mead(loss, [math.log(getattr(CALIBRATION, name)) for name in FITTED])
    best = calibration(x)
    print(f"fitted on {len(points)} points, mean squared log error {loss(x):.4f}:")
    for name in FITTED:
        print(f"  {name} = {getattr(best, name):.3g}")
    return best


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--fit", action="store_true", help="refit the calibration's fitted entries")
    args = parser.parse_args()
    if args.fit:
        fit()
        sys.exit(0)
    print("MODELLED vs PUBLISHED. Every figure on the right is pykv.gpu_model's prediction, not a measurement.\n")
    print("\n".join(table(args.markdown)))
    print()
    print("\n".join(summary()))
    print()
    print("\n".join(figure_19a()))
    print("\nSources:")
    print("\n".join(f"  {key}: {text}" for key, text in SOURCES.items()))
