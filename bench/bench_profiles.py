"""The same workloads under each vLLM profile, on the shipped model: what the schedules cost, and proof
that the tokens do not change.

    python -m bench.bench_profiles            # storm (16 x 96 tokens) on 64, 96 and 128 blocks, burst on 24
    python -m bench.bench_profiles --quick    # one pool per workload

Per run: engine steps, pykv:num_preemptions_total, prefill tokens computed (re-prefills included),
vllm:prompt_tokens_total as the profile's release counts it, measured wall time on this device, and
whether every request's greedy tokens equal those of the v0.33 run.
"""

from __future__ import annotations

import argparse
import logging

import torch

from pykv import EngineConfig
from pykv.border.workload import make_workload
from pykv.engine.model.loader import load_model
from pykv.lab.completed_run import run_to_completion

ORDERS = {
    "v0.6 (chunked prefill off)": {
        "vllm_profile": "v0.6",
        "enable_chunked_prefill": False,
        "max_num_batched_tokens": 4096,
    },
    "v0.6": {"vllm_profile": "v0.6"},
    "v0.6 swap": {"vllm_profile": "v0.6", "preemption_mode": "swap", "num_cpu_blocks": 512},
    "v0.10": {"vllm_profile": "v0.10"},
    "v0.33": {"vllm_profile": "v0.33"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    logging.getLogger("pykv").setLevel(logging.ERROR)
    torch.set_num_threads(2)
    loaded = load_model("tiny")
    cases = [("storm", {"n": 16, "max_tokens": 96}, (96,) if args.quick else (64, 96, 128)), ("burst", {}, (24,))]
    print(
        f"{'workload':<8} {'pool':>5} {'order':<28} {'steps':>6} {'preempt':>8} {'prefill':>8} "
        f"{'vllm:prompt':>11} {'wall s':>7}  tokens"
    )
    for workload, kwargs, pools in cases:
        for pool in pools:
            reference = None
            rows = []
            for name, changes in reversed(ORDERS.items()):  # v0.33 first: the reference
                config = EngineConfig(num_gpu_blocks=pool, max_num_seqs=16, **changes)
                run = run_to_completion(config, make_workload(workload, seed=0, **kwargs), loaded)
                tokens = {o.request_id: o.output_token_ids for o in run.outputs}
                reference = reference or tokens
                m = run.engine.metrics
                rows.append(
                    f"{workload:<8} {pool:>5} {name:<28} {run.engine.step_count:>6} "
                    f"{m.value('pykv:num_preemptions_total'):>8.0f} "
                    f"{m.value('pykv:prefill_tokens_total'):>8.0f} "
                    f"{m.value('vllm:prompt_tokens_total'):>11.0f} {run.wall_s:>7.2f}  "
                    f"{'same' if tokens == reference else 'DIFFERENT'}"
                )
            print("\n".join(reversed(rows)), flush=True)
    print(f"device: cpu (measured, torch threads {torch.get_num_threads()})")


if __name__ == "__main__":
    main()
