"""Drive vLLM 0.33.0's own CPU offloading manager (``CPUOffloadingManager`` with its default ``LRUCachePolicy``,
``vllm/v1/kv_offload/cpu/manager.py`` and ``cpu/policies/lru.py``) through scripts of tier operations; write what
it did.

Run by the 0.33.0 venv's python (oracle/build_venvs.py), never by pykv's: it imports no pykv code.

    <venv>/bin/python oracle/drive_tier.py SCRIPTS.json RESULTS.json

A script is ``{"num_blocks": N, "block_size": B, "ops": [...]}``; each op is one call of the connector's scheduler
half (``offloading/scheduler.py``) into the manager, as pykv's ``OffloadTier`` models them:

    ["store", request, [[index, hash], ...]]   prepare_store of those blocks, head to tail (``_build_store_jobs``)
    ["load", request, [[index, hash], ...]]    prepare_load (``update_state_after_alloc``)
    ["finish", request]                        on_request_finished, at the end of the next step
    ["end_step"]                               the step's finished requests, then every pending store and load
                                               completes (pykv's transfers are synchronous)

A block's position is the end token of its chunk, ``(index + 1) * block_size`` (``update_offload_keys``). The result
of a script is one entry per op: a store's sorted stored hashes, or null when the manager refused it; after
``end_step`` the sorted hashes the tier holds; ``{"missing": [...]}`` for a load of blocks the manager lacks (the
load is skipped); null for the others.

The connector's own half (which blocks a request offers when: prompt only, ``next_stored_chunk_idx``) is not run
here: it needs a scheduler, a ``KVTransferConfig`` and worker results (see oracle/README.md).
"""

from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
warnings.filterwarnings("ignore")

from vllm.v1.kv_offload.base import ReqContext, get_offload_block_hash, make_offload_key  # noqa: E402
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager  # noqa: E402


def key_of(block_hash: int):
    return make_offload_key(block_hash.to_bytes(8, "big", signed=True), 0)


def hash_of(key) -> int:
    return int.from_bytes(get_offload_block_hash(key), "big", signed=True)


def run(script: dict) -> list:
    manager = CPUOffloadingManager(script["num_blocks"], cache_policy="lru")
    contexts: dict[str, ReqContext] = {}
    pending_stores, pending_loads, finished, results = [], [], [], []

    def context(request_id: str, blocks) -> ReqContext:
        if request_id not in contexts:
            contexts[request_id] = ReqContext(request_id)
            manager.on_new_request(contexts[request_id])
        ctx = contexts[request_id]
        for index, block_hash in blocks:
            ctx.set_offload_key_position(key_of(block_hash), (index + 1) * script["block_size"])
        return ctx

    for op in script["ops"]:
        kind = op[0]
        if kind == "store":
            ctx = context(op[1], op[2])
            out = manager.prepare_store([key_of(h) for _, h in op[2]], ctx)
            if out is None:
                results.append(None)
                continue
            pending_stores.append((list(out.keys_to_store), ctx))
            results.append(sorted(hash_of(k) for k in out.keys_to_store))
        elif kind == "load":
            ctx = context(op[1], op[2])
            keys = [key_of(h) for _, h in op[2]]
            missing = [hash_of(k) for k in keys if manager.lookup(k, ctx).name != "HIT"]
            if missing:
                results.append({"missing": missing})  # pykv's tier held blocks this one did not
                continue
            manager.prepare_load(keys, ctx)
            pending_loads.append((keys, ctx))
            results.append(None)
        elif kind == "finish":
            finished.append(contexts.pop(op[1], None))
            results.append(None)
        elif kind == "end_step":
            for ctx in finished:
                if ctx is not None:
                    manager.on_request_finished(ctx)
            finished = []
            for keys, ctx in pending_stores:
                manager.complete_store(keys, ctx)
            for keys, ctx in pending_loads:
                manager.complete_load(keys, ctx)
            pending_stores, pending_loads = [], []
            results.append(sorted(hash_of(k) for k in manager._policy.chunks))
        else:
            raise ValueError(f"unknown op {kind!r}")
    return results


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        scripts = json.load(f)
    with open(dst, "w") as f:
        json.dump([run(s) for s in scripts], f)


if __name__ == "__main__":
    main()
