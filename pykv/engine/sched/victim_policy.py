"""Which running request to preempt when a request cannot get a block (``EngineConfig.preemption_victim``).

Each policy picks one victim from the candidates, in running-queue order, and says why in one line
(the narration shows it):

- ``last``: the last candidate, i.e. the request admitted most recently. vLLM's default in every
  release (V0 ``vllm/core/scheduler.py`` ``_schedule_running``: ``running_queue.pop()``; V1
  ``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule``: ``self.running.pop()``).
- ``priority``: the worst ``(priority, arrival)``: the largest priority value (lower runs first), the
  latest arrival among equals. vLLM's priority scheduling (0.33.0, same function:
  ``max(self.running, key=lambda r: (r.priority, r.arrival_time))``).
- ``lcf``: least computed tokens first: the victim that loses the least work when its KV is dropped
  (the policy proposed to vLLM to cut the recompute tax; not in any vLLM release). Ties: the later.
- ``sglang``: SGLang's retract order (sglang 0.5.23, ``python/sglang/srt/managers/schedule_batch.py``,
  ``ScheduleBatch._get_decode_retraction_order``: sort by ``(len(output_ids), -len(origin_input_ids))``
  descending and retract from the end): the fewest output tokens, then the longest input. Ties: the later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pykv.border.preemption_choices import VICTIM_POLICIES
from pykv.border.request import Request


@dataclass(frozen=True)
class VictimChoice:
    request: Request
    why: str  # the end of one line of narration: "req 7 was chosen because <why>."


def choose_victim(policy: str, candidates: Sequence[Request]) -> VictimChoice:
    """The request ``policy`` preempts among ``candidates`` (running-queue order, at least one)."""
    assert candidates, "a preemption needs a candidate"
    order = range(len(candidates))
    if policy == "last":
        victim = candidates[-1]
        return VictimChoice(victim, "it is the last of the running queue, admitted most recently (vLLM's default)")
    if policy == "priority":
        i = max(order, key=lambda i: (candidates[i].priority, candidates[i].arrival_time, i))
        victim = candidates[i]
        return VictimChoice(
            victim,
            f"it has the worst (priority, arrival) of {len(candidates)} running: priority "
            f"{victim.priority} (lower runs first), arrived at step {victim.arrival_step}",
        )
    if policy == "lcf":
        i = min(order, key=lambda i: (candidates[i].num_computed_tokens, -i))
        victim = candidates[i]
        return VictimChoice(
            victim,
            f"it has the fewest computed tokens ({victim.num_computed_tokens}) of "
            f"{len(candidates)} running: dropping its KV loses the least work",
        )
    if policy == "sglang":
        i = min(order, key=lambda i: (len(candidates[i].output_token_ids), -candidates[i].num_prompt_tokens, -i))
        victim = candidates[i]
        return VictimChoice(
            victim,
            f"it has the fewest output tokens ({len(victim.output_token_ids)}), then the "
            f"longest input ({victim.num_prompt_tokens} tokens), of {len(candidates)} running "
            "(SGLang's retract order)",
        )
    raise ValueError(f"Unknown preemption_victim {policy!r}; use one of {', '.join(VICTIM_POLICIES)}.")
