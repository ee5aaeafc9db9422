"""The recompute tax across victim policies and KV fates, on the shipped model, and what V1's CPU offloading
tier's copies cost here.

    python -m bench.bench_recompute_tax            # long_context (6 x 48) and storm (8 x 96), three pools each
    python -m bench.bench_recompute_tax --quick    # one pool per workload
    python -m bench.bench_recompute_tax --workloads long_context --pools 16   # one workload, one pool

Per run: preemptions, tokens recomputed, the recompute tax (share of prefill tokens, counted; share of
prefill forward time, measured on this device), tokens loaded from the tier, and whether every request's
greedy tokens equal the `last` + recompute run's. Then the tier's measured store and load copies (bytes,
time, bandwidth) beside the same copies modelled over PCIe Gen5 x16.
"""

from __future__ import annotations

import argparse
import logging

import torch

from pykv import EngineConfig
from pykv.border.workload import make_workload
from pykv.engine.model.loader import load_model
from pykv.lab.completed_run import run_to_completion

FATES = {
    "recompute": {},
    "recompute+prefix": {"enable_prefix_caching": True},
    "recompute+offload": {"num_offload_blocks": 256},
    "swap (v0.6)": {"vllm_profile": "v0.6", "preemption_mode": "swap", "num_cpu_blocks": 256},
}
POLICIES = ("last", "priority", "lcf", "sglang")
WORKLOADS = {
    "long_context": ({"n": 6, "max_tokens": 48}, (16, 24, 32)),
    "storm": ({"n": 8, "max_tokens": 96}, (24, 32, 40)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--pools", nargs="+", type=int, help="device pool sizes (default: each workload's three)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.getLogger("pykv").setLevel(logging.ERROR)
    loaded = load_model("tiny", "cpu", "float32")
    transfers = []
    print(
        f"{'workload':13} {'pool':>4} {'fate':18} {'policy':8} {'preempt':>7} {'recomp':>6} {'tax tok':>7} "
        f"{'tax time':>8} {'loaded':>6}  tokens"
    )
    for name in args.workloads:
        wargs, pools = WORKLOADS[name]
        pools = tuple(args.pools) if args.pools else pools
        workload = make_workload(name, **wargs)
        for i, request in enumerate(workload.requests):  # priorities for the priority policy: 0, 1, 2, 0, ...
            workload.requests[i] = request.model_copy(update={"priority": i % 3})
        for pool in pools[:1] if args.quick else pools:
            reference = None
            for fate, changes in FATES.items():
                for policy in POLICIES:
                    config = EngineConfig(num_gpu_blocks=pool, preemption_victim=policy, **changes)
                    run = run_to_completion(config, workload, loaded)
                    t = run.totals()
                    tokens = [o.output_token_ids for o in run.outputs]
                    reference = reference or tokens
                    for report_transfers in _transfers(run):
                        transfers.append(report_transfers)
                    print(
                        f"{name:13} {pool:>4} {fate:18} {policy:8} {t.preemptions:>7} "
                        f"{t.recomputed_tokens:>6} {t.recompute_tax:>7.1%} {t.recompute_tax_time:>8.1%} "
                        f"{t.loaded_tokens:>6}  {'identical' if tokens == reference else 'DIFFER'}",
                        flush=True,
                    )
    print()
    for direction in ("store", "load"):
        mine = [t for t in transfers if t[0] == direction]
        if not mine:
            continue
        num_bytes, seconds, modelled = (sum(t[i] for t in mine) for i in (1, 2, 3))
        print(
            f"tier {direction}s over {len(mine)} runs: {num_bytes / 2**20:.1f} MiB, {seconds * 1e3:.2f} ms measured "
            f"on cpu ({num_bytes / seconds / 1e9:.2f} GB/s); modelled over PCIe Gen5 x16 (bytes / bandwidth, "
            f"copy overheads left out): {modelled * 1e3:.2f} ms"
        )


def _transfers(run):
    """The tier copies of a run, from the engine's metrics: (direction, bytes, measured s, modelled s)."""
    m, config = run.engine.metrics, run.engine.config
    out = []
    for direction in ("store", "load"):
        num_bytes = m.optional_value(f"vllm:kv_offload_{direction}_bytes_total")  # None: a profile without the tier
        if num_bytes:
            seconds = m.value(f"vllm:kv_offload_{direction}_time_total")
            modelled = num_bytes / (config.pcie_bandwidth_gbps * 1e9)
            out.append((direction, num_bytes, seconds, modelled))
    return out


if __name__ == "__main__":
    main()
