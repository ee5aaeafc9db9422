"""Recompute vs swap: what one preemption costs per token measured on this machine, and where a
modelled PCIe swap becomes cheaper than a modelled GPU re-prefill.

    python bench/crossover.py                  # measure on the shipped model, then model
    python bench/crossover.py --no-measure     # the modelled part only

1. Measured: the canonical storm sweep (``SweepSpec()``: 8 x 96 tokens, pools 24..64, recompute and
   swap) on this device; every completed preemption's cost over the tokens it lost.
2. Modelled (not measured; every assumption printed): for a victim of L tokens,
   recompute(L) = (2 * P * L + 2 * layers * q_heads * head_dim * L^2) / F   (weights' matmuls + causal
   attention, in a batch that is compute-bound at F FLOP/s), and
   swap(L) = out + in, each = bytes(L) / B + copies * overhead, as ``pykv.pcie.modelled_copy_seconds``
   prices the app's swaps (bytes in whole blocks; "batched" = 1 copy each way, "per-block" = one per
   block per layer per K/V). The crossover is the shortest victim for which swap is cheaper.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pykv.pcie import PCIE_COPY_OVERHEAD_US, PCIE_GBPS, modelled_copy_seconds  # noqa: E402

GPU_FLOPS = 989e12 * 0.5  # assumed: H100 SXM dense bf16 peak, at 50% utilisation for a prefill batch
BLOCK = 16
OVERHEAD_US = PCIE_COPY_OVERHEAD_US  # per copy issued, the app's default
LENGTHS = (16, 64, 256, 1024, 4096)


@dataclass(frozen=True)
class Shape:
    name: str
    layers: int
    hidden: int
    intermediate: int
    q_heads: int
    kv_heads: int
    head_dim: int
    context: int  # max_position_embeddings: the longest victim there can be
    kv_bytes: int = 2  # fp16 KV cache on the GPU

    @property
    def params(self) -> int:
        """Weights each token passes through (embedding lookup and LM head left out)."""
        attn = self.hidden * self.head_dim * (2 * self.q_heads + 2 * self.kv_heads)
        return self.layers * (attn + 3 * self.hidden * self.intermediate)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.layers * 2 * self.kv_heads * self.head_dim * self.kv_bytes

    def recompute_s(self, tokens: int) -> float:
        return (2 * self.params * tokens + 2 * self.layers * self.q_heads * self.head_dim * tokens**2) / GPU_FLOPS

    def swap_s(self, tokens: int, gbps: float, per_block: bool) -> float:
        blocks = math.ceil(tokens / BLOCK)
        copies = blocks * self.layers * 2 if per_block else 1
        return 2 * modelled_copy_seconds(blocks * BLOCK * self.kv_bytes_per_token, copies, gbps, OVERHEAD_US)


SHAPES = (
    Shape("shipped tiny (4 layers, hidden 256, 8/2 heads x 32)", 4, 256, 704, 8, 2, 32, 1024),
    Shape("0.5B Llama shape, Qwen2-0.5B-like (24 layers, hidden 896, 14/2 heads x 64)",
          24, 896, 4864, 14, 2, 64, 32768),
)


def crossover(shape: Shape, gbps: float, per_block: bool) -> str:
    for tokens in range(1, shape.context + 1):
        if shape.swap_s(tokens, gbps, per_block) < shape.recompute_s(tokens):
            return f"swap cheaper from {tokens} tokens"
    return f"recompute cheaper at every length up to the {shape.context}-token context"


def modelled() -> None:
    print(f"MODELLED, not measured. GPU re-prefill at {GPU_FLOPS / 1e12:.0f} TFLOP/s effective (assumed: H100 SXM "
          f"989 TFLOP/s dense bf16 x 50%); PCIe x16 {PCIE_GBPS['gen4']:g} GB/s (Gen4), {PCIE_GBPS['gen5']:g} GB/s "
          f"(Gen5), {OVERHEAD_US:g} us per copy; fp16 KV; block {BLOCK}; no launch or latency floor on recompute.")
    for shape in SHAPES:
        print(f"\n{shape.name}: {shape.params / 1e6:.1f} M weights per token, "
              f"{shape.kv_bytes_per_token} B of KV per token")
        print("  victim tokens       " + "".join(f"{n:>10}" for n in LENGTHS) + "   (ms per preemption)")
        print("  recompute           " + "".join(f"{shape.recompute_s(n) * 1e3:>10.4f}" for n in LENGTHS))
        for gen, gbps in PCIE_GBPS.items():
            for per_block in (False, True):
                label = f"swap {gen} {'per-block' if per_block else 'batched'}"
                costs = "".join(f"{shape.swap_s(n, gbps, per_block) * 1e3:>10.4f}" for n in LENGTHS)
                print(f"  {label:<20}{costs}   -> {crossover(shape, gbps, per_block)}")


def measured() -> None:
    from pykv.loader import load_model
    from pykv.runtime import configure_torch_threads
    from pykv.sweep import SweepSpec, run_sweep

    configure_torch_threads()
    logging.getLogger("pykv").setLevel(logging.ERROR)
    spec = SweepSpec()
    costs = run_sweep(spec, loaded=load_model(spec.base.model)).preemptions
    device = costs["device"].iloc[0]
    print(f"MEASURED on {device}, shipped model, {spec.workload} {spec.workload_args}, pools {spec.values}:")
    per_token = {}
    for mode, rows in costs.groupby("preemption_mode"):
        per_token[mode] = rows["measured_s"].sum() / rows["seq_len"].sum()
        print(f"  {mode:<10} {len(rows):>3} preemptions, {rows['seq_len'].sum():>5} tokens lost, "
              f"{rows['measured_s'].sum() * 1e3:8.3f} ms -> {per_token[mode] * 1e6:8.3f} us per token, "
              f"{rows['measured_s'].sum() * 1e6 / (rows['num_bytes'].sum() / 1024):8.3f} us per KiB of KV")
    if {"recompute", "swap"} <= per_token.keys():
        print(f"  recompute / swap cost per token on {device}: {per_token['recompute'] / per_token['swap']:.0f}x")
    print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-measure", action="store_true", help="print the modelled part only")
    if not parser.parse_args().no_measure:
        measured()
    modelled()
