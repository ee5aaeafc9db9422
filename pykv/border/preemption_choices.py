"""What a user can choose when the KV pool is full, in two lines each, with the vLLM profile that has it: the
About page shows these, the README says the same."""

from __future__ import annotations

# preemption_victim: which running request is preempted.
VICTIM_POLICIES: dict[str, str] = {
    "last": "The last request of the running queue (the most recently admitted). vLLM's default in every "
            "release; every profile.",
    "priority": "The worst (priority, arrival): lower priority values run first, as vLLM's "
                "--scheduling-policy priority, which also orders the waiting queue; every profile.",
    "lcf": "Least computed tokens first: the victim that loses the least work. Proposed to vLLM to cut the "
           "recompute tax, in no release; every profile.",
    "sglang": "SGLang's retract order: the fewest output tokens, then the longest input. SGLang's, not vLLM's; "
              "every profile.",
}

# Where a victim's KV goes (preemption_mode, and V1's offloading tier).
KV_FATES: dict[str, str] = {
    "recompute": "Drop the victim's KV and prefill its tokens again when it returns. The only mode of V1: "
                 "v0.10 and v0.33 (and an option of v0.6).",
    "swap": "Copy the victim's blocks to a CPU swap pool and back when there is room. V0 only: v0.6 "
            "(swap_space or num_cpu_blocks).",
    "auto": "V0's default: swap a request that has or will have several sequences (SamplingParams(n=...)), whole, "
            "and recompute one with a single sequence; v0.6 only.",
    "recompute+offload": "Recompute, but full blocks are also stored to a CPU tier as they are computed and loaded "
                         "back at re-admission. vLLM 0.11+'s --kv-offloading-size; v0.33 only.",
    "+prefix": "Prefix caching beside any mode: a victim's freed blocks keep their hashes and are hits when it "
               "returns, until another request takes them; every profile.",
}
