"""The tuning order (gpu-memory-utilization, max-num-seqs, swap space, prefix caching, chunked prefill) in the flags
of the release that was recognised: V1 has no swap tier (`--swap-space` does nothing there, and is gone by 0.20);
0.11.1+ offers a CPU tier as `--kv-offloading-size` (0.11.1 to 0.12 only with `--kv-offloading-backend native`: the
size alone does nothing there; 0.20.0 and later default to native); V1 always chunks prefills (tune
`--max-num-batched-tokens`)."""

from __future__ import annotations

from pykv.bridge.base.release_guess import ReleaseGuess

STEPS = ("gpu_memory", "max_num_seqs", "swap", "prefix_caching", "chunked_prefill")


def step_text(step: str, release: ReleaseGuess) -> str | None:
    v1 = release.engine == "v1"
    if step == "gpu_memory":
        default = "0.92" if release.at_least("0.20.0") is True else "0.90"  # config/cache.py: 0.92 by 0.20.0
        return f"raise --gpu-memory-utilization (e.g. {default} -> 0.95) for more KV blocks"
    if step == "max_num_seqs":
        return "lower --max-num-seqs so the running batch fits the KV cache"
    if step == "swap":
        if not v1:
            return "size --swap-space (GiB of CPU KV per GPU) to hold the swapped groups"
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


def fix_text(release: ReleaseGuess, steps: tuple[str, ...] = STEPS, lead: str | None = None) -> str:
    """The chosen steps, always in the tuning order, numbered: '1) ...; 2) ...'."""
    ordered = [text for step in STEPS if step in steps for text in [step_text(step, release)] if text]
    body = "; ".join(f"{number}) {text}" for number, text in enumerate(ordered, start=1))
    return f"{lead} {body}" if lead else body
