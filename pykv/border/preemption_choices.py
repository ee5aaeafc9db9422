"""What a user can choose when the KV pool is full, with the vLLM profile that has it: the one table of
victim policies (the engine's ``preemption_victim``, its CLI choices, the Sweep's labels, the About page and
the ``vllm serve`` translation all read it) and the fates of a victim's KV."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Callable, Literal

from pykv.border.vllm_profiles import VllmProfile, profile_names

VictimPolicyName = Literal["last", "priority", "lcf", "sglang"]


@dataclass(frozen=True)
class VictimPolicy:
    name: str
    label: str  # a few words, for legends and the CLI's help
    about: str  # two lines for the About page
    vllm_scheduling_policy: str | None  # the --scheduling-policy that picks victims this way; None: no release
    not_vllm: str | None = None  # whose policy it is, when vLLM has none


# preemption_victim: which running request is preempted.
VICTIM_POLICIES: dict[str, VictimPolicy] = {
    p.name: p
    for p in (
        VictimPolicy(
            "last",
            "last of the running queue (vLLM's default)",
            "The last request of the running queue (the most recently admitted). vLLM's default in every "
            "release; every profile.",
            vllm_scheduling_policy="fcfs",
        ),
        VictimPolicy(
            "priority",
            "worst (priority, arrival) (vLLM's priority scheduling)",
            "The worst (priority, arrival): lower priority values run first, as vLLM's "
            "--scheduling-policy priority, which also orders the waiting queue; every profile.",
            vllm_scheduling_policy="priority",
        ),
        VictimPolicy(
            "lcf",
            "least computed tokens first (a proposal to vLLM, not in a release)",
            "Least computed tokens first: the victim that loses the least work. Proposed to vLLM to cut the "
            "recompute tax (vLLM PR #53723), in no release; every profile. Ties: pykv takes the later request; "
            "the proposal's min(running, key=num_computed_tokens) takes the earliest.",
            vllm_scheduling_policy=None,
            not_vllm="a proposal to vLLM",
        ),
        VictimPolicy(
            "sglang",
            "fewest outputs, then longest input (SGLang's retract order)",
            "SGLang's retract order: the fewest output tokens, then the longest input. SGLang's, not vLLM's; "
            "every profile.",
            vllm_scheduling_policy=None,
            not_vllm="SGLang's retract order",
        ),
    )
}
assert tuple(VICTIM_POLICIES) == typing.get_args(VictimPolicyName), "the Literal and the table name the same policies"
POLICY_LABELS: dict[str, str] = {name: p.label for name, p in VICTIM_POLICIES.items()}


def _having(feature: Callable[[VllmProfile], bool]) -> str:
    *rest, last = profile_names(feature)
    return f"{', '.join(rest)} and {last}" if rest else last


# Where a victim's KV goes (preemption_mode, and V1's offloading tier); the profiles named come from the table.
KV_FATES: dict[str, str] = {
    "recompute": "Drop the victim's KV and prefill its tokens again when it returns. The only mode of V1: "
    f"{_having(lambda p: not p.swaps)} (and an option of {_having(lambda p: p.swaps)}).",
    "swap": f"Copy the victim's blocks to a CPU swap pool and back when there is room. V0 only: "
    f"{_having(lambda p: p.swaps)} (swap_space or num_cpu_blocks).",
    "auto": "V0's default: swap a request that has or will have several sequences (SamplingParams(n=...)), whole, "
    f"and recompute one with a single sequence; {_having(lambda p: p.swaps)} only.",
    "recompute+offload": "Recompute, but each request's full prompt blocks are also stored to a CPU tier once "
    "computed and loaded back at re-admission; its generated tokens are always recomputed "
    "(0.33 offloads prompt blocks only). vLLM's --kv-offloading-size (0.11.1+; 0.11.1 to "
    f"0.12 also need --kv-offloading-backend native, 0.33 the size alone); {_having(lambda p: p.has_kv_offloading)} "
    "only.",
    "+prefix": "Prefix caching beside any mode: a victim's freed blocks keep their hashes and are hits when it "
    "returns, until another request takes them; every profile.",
}
