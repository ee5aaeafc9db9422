"""The tuning order in the flags of the release that was recognised, at the server's own values (``scale``).

The order is vLLM's own optimization guide, section "Preemption" (docs/configuration/optimization.md, read at
0.9.1 and 0.17.1; docs/performance/optimization.md in 0.8.3): raise gpu_memory_utilization, lower max_num_seqs or
max_num_batched_tokens, raise tensor_parallel_size; then what the guide does not cover: a CPU tier, prefix caching,
chunked prefill. V1 has no swap tier (`--swap-space` does nothing there, and is gone by 0.20); 0.11.1+ offers a CPU
tier as `--kv-offloading-size` (0.11.1 to 0.12 only with `--kv-offloading-backend native`: the size alone does
nothing there; 0.20.0 and later default to native); V1 always chunks prefills (tune `--max-num-batched-tokens`)."""

from __future__ import annotations

from pykv.bridge.base.release_guess import ReleaseGuess
from pykv.bridge.findings.evidence import Evidence
from pykv.bridge.findings.scale import gpu_memory_text, max_num_seqs_text, tensor_parallel_text

STEPS = ("gpu_memory", "max_num_seqs", "tensor_parallel", "swap", "prefix_caching", "chunked_prefill")


def step_text(step: str, release: ReleaseGuess, ev: Evidence | None = None) -> str | None:
    v1 = release.engine == "v1"
    if step == "gpu_memory":
        return gpu_memory_text(ev, release)
    if step == "max_num_seqs":
        return max_num_seqs_text(ev)
    if step == "tensor_parallel":
        return tensor_parallel_text(ev)
    if step == "swap":
        config = ev.config if ev is not None else None
        if not v1:
            if config is not None and config.swap_space_gib:
                swap = config.swap_space_gib
                return f"raise your --swap-space {swap:g} (GiB of CPU KV per GPU) to hold the swapped groups"
            return "size --swap-space (GiB of CPU KV per GPU) to hold the swapped groups"
        if config is not None and config.kv_offloading_size_gib and release.at_least("0.11.1") is not False:
            return f"raise your --kv-offloading-size {config.kv_offloading_size_gib:g} (GiB of CPU KV tier)"
        offloading = release.at_least("0.11.1")
        if offloading is False:
            return "V1 before 0.11.1 has no CPU KV tier (--swap-space does nothing in V1): upgrade for one"
        if release.at_least("0.20.0") is True:
            return "add a CPU KV tier with --kv-offloading-size (GiB) (V1 has no --swap-space)"
        return (
            "add a CPU KV tier with --kv-offloading-size (GiB) --kv-offloading-backend native: until native became "
            "the default (by 0.20.0) the size alone does nothing (V1 has no --swap-space)"
        )
    if step == "prefix_caching":
        if v1:
            return "keep prefix caching on (V1 default; --enable-prefix-caching) and put the shared text first"
        return "turn on --enable-prefix-caching and put the shared text first"
    if step == "chunked_prefill":
        if v1:
            return "V1 always chunks prefills: lower --max-num-batched-tokens to bound each chunk"
        return "turn on --enable-chunked-prefill with a --max-num-batched-tokens budget"
    return None


def fix_text(ev: Evidence, steps: tuple[str, ...] = STEPS, lead: str | None = None) -> str:
    """The chosen steps, always in the tuning order, numbered: '1) ...; 2) ...'."""
    ordered = [text for step in STEPS if step in steps for text in [step_text(step, ev.release, ev)] if text]
    body = "; ".join(f"{number}) {text}" for number, text in enumerate(ordered, start=1))
    return f"{lead} {body}" if lead else body
