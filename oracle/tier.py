"""The offloading tier's oracle: random scripts of tier operations run through pykv's ``OffloadTier`` here and
through vLLM 0.33.0's ``CPUOffloadingManager`` (LRU policy) by ``oracle/drive_tier.py`` in the 0.33.0 venv; the two
results must be equal op for op (what each store stored or that it was refused, what the tier holds after each
step). See drive_tier.py for the script format."""

from __future__ import annotations

import json
import os
import random
import subprocess
import tempfile
from pathlib import Path

from oracle import build_venvs, pykv_side

HERE = Path(__file__).resolve().parent
RELEASE = "0.33.0"


def random_script(seed: int, num_steps: int = 30) -> dict:
    """Requests sharing prefixes of blocks; per step: loads of runs the tier holds, then stores of windows of
    blocks (head to tail), now and then a request finishing; a small tier, so that stores evict and are refused."""
    rng = random.Random(seed)
    num_blocks, block_size = rng.randint(2, 9), 4
    chains: dict[str, list[int]] = {}
    active: list[str] = []
    held: set[int] = set()  # what the tier holds at the start of the step (pykv's view, kept by the generator)
    ops: list = []
    tier = pykv_side.offload_tier(num_blocks, block_size)
    for step in range(num_steps):
        while len(active) < 4:
            rid = f"r{len(chains)}"
            group, split, length = rng.randint(0, 2), rng.randint(0, 6), rng.randint(1, 10)
            chains[rid] = [hash((group, i)) if i < split else hash((rid, i)) for i in range(length)]
            active.append(rid)
        for rid in rng.sample(active, rng.randint(0, 2)):
            start = rng.randrange(len(chains[rid]))
            run = []
            for h in chains[rid][start:]:
                if h not in held:
                    break
                run.append(h)
            if run:
                ops.append(["load", rid, [[start + k, h] for k, h in enumerate(run)]])
                tier.load(rid, start, run)
        for rid in rng.sample(active, rng.randint(1, len(active))):
            a = rng.randrange(len(chains[rid]))
            b = rng.randint(a + 1, len(chains[rid]))
            ops.append(["store", rid, [[i, chains[rid][i]] for i in range(a, b)]])
            tier.store(rid, [(i, chains[rid][i], 0) for i in range(a, b)])
        if rng.random() < 0.4:
            rid = active.pop(rng.randrange(len(active)))
            ops.append(["finish", rid])
            tier.finish(rid)
        ops.append(["end_step"])
        tier.end_step()
        held = set(tier.pool.cached)
    return {"num_blocks": num_blocks, "block_size": block_size, "ops": ops}


def run_pykv(script: dict) -> list:
    tier = pykv_side.offload_tier(script["num_blocks"], script["block_size"])
    results: list = []
    for op in script["ops"]:
        kind = op[0]
        if kind == "store":
            copies = tier.store(op[1], [(i, h, 0) for i, h in op[2]])
            results.append(None if copies is None else sorted(tier.pool.blocks[cpu].block_hash for _, cpu in copies))  # type: ignore[type-var]
        elif kind == "load":
            tier.load(op[1], op[2][0][0], [h for _, h in op[2]])
            results.append(None)
        elif kind == "finish":
            tier.finish(op[1])
            results.append(None)
        else:
            tier.end_step()
            tier.check_invariants()
            results.append(sorted(tier.pool.cached))
    return results


def run_vllm(scripts: list[dict], timeout: float = 600) -> list[list]:
    work = Path(tempfile.mkdtemp(prefix="pykv-tier-oracle-"))
    src, dst = work / "scripts.json", work / "results.json"
    src.write_text(json.dumps(scripts))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(
        [str(build_venvs.venv_python(RELEASE)), str(HERE / "drive_tier.py"), str(src), str(dst)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0 or not dst.exists():
        raise RuntimeError(
            f"the {RELEASE} tier driver failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
        )
    return json.loads(dst.read_text())


def first_divergence(script: dict, ours: list, theirs: list) -> str | None:
    for k, (op, a, b) in enumerate(zip(script["ops"], ours, theirs)):
        if a != b:
            before = script["ops"][max(0, k - 3) : k]
            return f"op {k} {op}: pykv {a}, vLLM {b} (after {before})"
    return None
