"""A lab fix said at the server's scale. The replay is scaled (12 running requests stand for 256, a 37-block pool for
11,250 blocks): its knob changes are ratios, and this module applies each ratio to the server's own figures::

    --max-num-seqs     lab 12 -> 6            your --max-num-seqs 256 -> about 128   (x 6/12)
                                              (its running peak where the log prints no --max-num-seqs)
    KV blocks          lab 37 -> 46           your 11,250 GPU blocks -> about 13,990 (x 46/37)
                                              = N -> M GiB of the model's KV per GPU (bytes per block x blocks)
                                              = --gpu-memory-utilization u -> u + extra GiB / the GPU's memory
    swap / offloading  lab C CPU blocks       C / lab GPU blocks x your GPU blocks, in GiB of the model's KV

The GiB figures need the model's KV bytes per token: the modelled target's (``pykv.gpu_model``); without it the
figures stay in blocks."""

from __future__ import annotations

from pykv.bridge import Diagnosis
from pykv.gpu_model import Estimate
from pykv.lab.server_replay import ReplayPlan
from pykv.lab.what_if import LabFix

MAX_UTILIZATION = 0.98  # past it the GPU has no room for activations: the fix is more GPUs, not a higher share


def server_blocks(plan: ReplayPlan, diagnosis: Diagnosis) -> tuple[int | None, int]:
    """The server's GPU blocks (None: not read) and its block size (16, vLLM's default, where not read)."""
    startup = diagnosis.startup[0] if diagnosis.startup else None
    size = (startup.block_size if startup else None) or diagnosis.config.block_size or 16
    blocks = plan.pressure.num_gpu_blocks
    if blocks is None and plan.pressure.capacity_tokens:
        blocks = plan.pressure.capacity_tokens // size
    return blocks, size


def at_server_scale(fix: LabFix, plan: ReplayPlan, diagnosis: Diagnosis, est: Estimate | None) -> str:
    """What ``fix`` means on the server (see the module's docstring), in its flags and units."""
    lab = plan.config
    if fix.step == "max_num_seqs":
        ratio = fix.changes["max_num_seqs"] / lab.max_num_seqs
        if seqs := diagnosis.config.max_num_seqs:
            return f"your --max-num-seqs {seqs:,} -> about {_scaled(seqs, ratio)}"
        peak = plan.pressure.running
        return (
            f"your running peak of {peak:,} -> about {_scaled(peak, ratio)} with --max-num-seqs "
            "(the log does not print its --max-num-seqs)"
        )
    blocks, size = server_blocks(plan, diagnosis)
    if fix.step == "gpu_memory":
        ratio = fix.changes["num_gpu_blocks"] / lab.num_gpu_blocks
        if blocks is None:
            return f"about {ratio - 1:.0%} more KV cache on your server (its block count was not read)"
        text = f"your {blocks:,} GPU blocks -> about {_scaled(blocks, ratio)} (+{ratio - 1:.0%})"
        if est is None:
            return text
        per_block = size * est.kv_bytes_per_token_per_gpu
        old, new = blocks * per_block / 2**30, blocks * ratio * per_block / 2**30
        text += f" = {old:,.1f} -> {new:,.1f} GiB of {est.shape.name} KV per GPU"
        util = diagnosis.config.gpu_memory_utilization
        if util is not None:
            wanted = util + (new - old) * 2**30 / (est.gpu.memory_gb * 1e9)
            text += (
                f"; --gpu-memory-utilization {util:.2f} -> about {wanted:.2f} on {est.gpu.name}"
                if wanted <= MAX_UTILIZATION
                else f"; more than {est.gpu.name} has ({util:.2f} -> {wanted:.2f}): add GPUs (tensor parallelism) "
                "or serve a smaller model"
            )
        return text
    if fix.step == "swap":
        lab_cpu = fix.changes.get("num_cpu_blocks") or fix.changes.get("num_offload_blocks") or 0
        flag = "--swap-space" if "num_cpu_blocks" in fix.changes else "--kv-offloading-size"
        share = lab_cpu / lab.num_gpu_blocks
        if blocks is None:
            return f"{flag}: a CPU pool {share:.1f}x your GPU KV cache"
        cpu = blocks * share
        if est is None:
            return f"{flag}: about {cpu:,.0f} CPU blocks ({share:.1f}x your {blocks:,} GPU blocks)"
        gib = cpu * size * est.kv_bytes_per_token_per_gpu / 2**30
        return f"{flag} about {gib:,.0f} GiB ({cpu:,.0f} blocks of {est.shape.name} KV)"
    same = {"prefix_caching": "--enable-prefix-caching", "chunked_prefill": "--enable-chunked-prefill"}.get(fix.step)
    return f"{same} on your server too" if same else "the same change on your server"


def _scaled(value: int, ratio: float) -> str:
    return f"{max(1, round(value * ratio)):,}"
