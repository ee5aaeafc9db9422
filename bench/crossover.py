"""Recompute vs swap: what one preemption costs per token measured on this machine, and where a
modelled PCIe swap becomes cheaper than a modelled GPU re-prefill.

    python -m bench.crossover                  # measure on the shipped model, then model
    python -m bench.crossover --no-measure     # the modelled part only

1. Measured: the default sweep (``SweepSpec()``: the small storm, 8 x 48 tokens, recompute and swap under
   vLLM 0.6.3, each point 3 times) on this device; every completed preemption's cost (the median of its repeats,
   on the wall clock and the engine thread's CPU clock) over the tokens it lost.
2. Modelled (not measured) by ``pykv.gpu_model`` (the same model and calibration the app shows; its
   formulas: ``pykv/gpu_model/estimate.py``, ``pykv/gpu_model/crossover.py``): for a victim of L tokens,
   recompute(L) = what re-prefilling L tokens adds to a step of 16 decodes at 512 tokens, or alone;
   swap(L) = copy out (D2H) + back in (H2D) over the GPU's host link, batched (one copy each way) or
   per-block (one per block, layer and K/V). The crossover is the shortest victim for which swap is cheaper.
"""

from __future__ import annotations

import argparse
import logging

from pykv import default_model_path
from pykv.gpu_model import ModelShape, estimate
from pykv.gpu_model.crossover import crossover_curves

BLOCK = 16
LENGTHS = (16, 64, 256, 1024, 4096)
TARGETS = (
    ("H100-SXM", "llama-3.1-8b"),
    ("A100-80GB-SXM", "llama-3.1-8b"),
    ("L4", "qwen2.5-0.5b"),
    ("H100-SXM", "shipped"),
    ("A100-80GB-SXM", "llama-2-7b"),
)


def modelled() -> None:
    print(
        "MODELLED, not measured (pykv.gpu_model: roofline per phase + overheads, the calibration table in "
        "pykv/gpu_model/calibration.py; host links in pykv/border/pcie.py). bf16; block 16; recompute inside a "
        "step of 16 decodes at 512 tokens (alone in brackets)."
    )
    for gpu, model in TARGETS:
        if model == "shipped":
            model = ModelShape.from_file(default_model_path() / "config.json", "shipped tiny")
        est = estimate(gpu, model)
        c = crossover_curves(est, BLOCK, lengths=LENGTHS)
        print(
            f"\n{est.label}: {est.shape.layer_params / 1e6:.1f} M weights per token, {est.kv_bytes_per_token:,} B "
            f"of KV per token, {est.link.name} (pinned H2D {est.link.h2d_gbps:g} / D2H {est.link.d2h_gbps:g} GB/s)"
        )
        print("  victim tokens       " + "".join(f"{n:>12}" for n in c.lengths) + "   (ms per preemption)")
        print("  recompute           " + "".join(f"{v:>12.4f}" for v in c.recompute_ms))
        print("  (recompute alone)   " + "".join(f"{v:>12.4f}" for v in c.recompute_alone_ms))
        for label, values, start in (
            ("swap batched", c.swap_batched_ms, c.batched_from),
            ("swap per-block", c.swap_per_block_ms, c.per_block_from),
        ):
            verdict = f"swap cheaper from {start} tokens" if start else "recompute cheaper at every length shown"
            print(f"  {label:<20}" + "".join(f"{v:>12.4f}" for v in values) + f"   -> {verdict}")


def measured() -> None:
    from pykv.border.runtime import configure_torch_threads
    from pykv.engine.model.loader import load_model
    from pykv.lab.sweep import SweepSpec, run_sweep

    configure_torch_threads()
    logging.getLogger("pykv").setLevel(logging.ERROR)
    spec = SweepSpec()
    costs = run_sweep(spec, loaded=load_model(spec.base.model)).preemptions
    device = costs["device"].iloc[0]
    print(
        f"MEASURED on {device}, shipped model, {spec.workload_text()}, pools {spec.values}, "
        f"{'; '.join(s.label for s in spec.series)}, median of {spec.repeats} repeats (wall | engine-thread CPU):"
    )
    per_token = {}
    for mode, rows in costs.groupby("preemption_mode"):
        per_token[mode] = rows["measured_s"].sum() / rows["seq_len"].sum()
        cpu = rows["measured_cpu_s"].sum() / rows["seq_len"].sum()
        print(
            f"  {mode:<10} {len(rows):>3} preemptions, {rows['seq_len'].sum():>5} tokens lost, "
            f"{rows['measured_s'].sum() * 1e3:8.3f} ms -> {per_token[mode] * 1e6:8.3f} | {cpu * 1e6:8.3f} us per "
            f"token, {rows['measured_s'].sum() * 1e6 / (rows['num_bytes'].sum() / 1024):8.3f} us per KiB of KV"
        )
    if {"recompute", "swap"} <= per_token.keys():
        print(f"  recompute / swap cost per token on {device}: {per_token['recompute'] / per_token['swap']:.0f}x")
    print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-measure", action="store_true", help="print the modelled part only")
    if not parser.parse_args().no_measure:
        measured()
    modelled()
