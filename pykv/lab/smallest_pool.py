"""The smallest device pool at which a Lab's run has no preemption, found by bisection over real runs.

Each probe is a run of the engine on the Lab's own config, workload and hand-added requests, with only
``num_gpu_blocks`` changed: to its end (clean), or to its first preemption (the answer for that size is known
then). No Streamlit here: the sidebar's helper drives it one probe at a time, within the session's allowance.

The search keeps a bracket::

    preempts <= low  <  answer  <= high  runs clean        (low = 0: nothing known to preempt yet)

The first probe is the Lab's own pool; while it preempts, the pool doubles (up to the app's largest); then
bisection halves ``high - low`` until they are neighbours, so both sides of the answer were run. A bigger pool
preempting less is what bisection assumes (true of a storm; a schedule can break it), which is why the answer's
neighbour is a real run too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from pykv.border.config import EngineConfig
from pykv.border.limits import MAX_STEPS
from pykv.border.request import SamplingParams
from pykv.border.workload import Workload
from pykv.engine.llm_engine import LLMEngine
from pykv.engine.model.loader import LoadedModel
from pykv.lab.lab import Lab, ManualRequest
from pykv.lab.workload_runner import WorkloadRunner


@dataclass(frozen=True)
class Probe:
    """One run at ``blocks``: ``clean`` (it finished, nobody preempted or turned away) or not, and what happened."""

    blocks: int
    clean: bool
    steps: int  # engine steps it ran
    what: str  # "ran to its end in 256 steps", "req 7 preempted at step 40", "the engine refuses it: ..."


@dataclass
class PoolSearch:
    """A bisection for the smallest clean ``num_gpu_blocks`` between 1 and ``max_blocks``: the Lab's config,
    workload and hand-added requests, copied when the search starts (a search outlives Applies of its answer)."""

    config: EngineConfig
    workload: Workload | None
    manual: tuple[ManualRequest, ...]
    max_blocks: int
    low: int = 0  # the largest pool known to preempt (0: none yet); changed by ``record`` only
    high: int | None = None  # the smallest pool known to run clean (None: none yet); changed by ``record`` only
    probes: list[Probe] = field(default_factory=list)

    @classmethod
    def of(cls, lab: Lab, max_blocks: int) -> "PoolSearch":
        return cls(lab.config, lab.workload, tuple(lab.manual), max_blocks)

    def same_run(self, lab: Lab) -> bool:
        """``lab`` runs what this search probes, but for its pool size."""
        mine = self.config.replace(num_gpu_blocks=lab.config.num_gpu_blocks)
        return (mine, self.workload, self.manual) == (lab.config, lab.workload, tuple(lab.manual))

    @property
    def answer(self) -> int | None:
        """The smallest clean pool, once its neighbour below is known to preempt (or is 0)."""
        return self.high if self.high is not None and self.high - self.low == 1 else None

    @property
    def none_clean(self) -> bool:
        """Even the largest pool preempts: there is no answer within the app's pools."""
        return self.low >= self.max_blocks

    def next_blocks(self) -> int | None:
        """The pool to run next; None once the search is over."""
        if self.answer is not None or self.none_clean:
            return None
        if self.high is None:
            return self.config.num_gpu_blocks if not self.probes else min(2 * self.low, self.max_blocks)
        return (self.low + self.high) // 2

    def probes_left(self) -> int:
        """About how many probes are still to run (exact once a clean pool is known)."""
        if self.next_blocks() is None:
            return 0
        span = (self.high if self.high is not None else self.max_blocks) - self.low
        return max(1, (span - 1).bit_length()) + (self.high is None)

    def record(self, probe: Probe) -> None:
        self.probes.append(probe)
        if probe.clean:
            self.high = probe.blocks if self.high is None else min(self.high, probe.blocks)
        else:
            self.low = max(self.low, probe.blocks)


def run_probe(
    search: PoolSearch,
    blocks: int,
    loaded: LoadedModel,
    time_budget_s: float | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> Probe | None:
    """Run the search's workload on ``blocks`` device blocks; None if the time budget ran out or ``should_stop()``
    said so before the run told anything (nothing is recorded then). A headless engine: plain torch attention, the
    same schedule as the Lab's step by step (``python -m bench.backend_parity``)."""
    try:
        engine = LLMEngine(search.config.replace(num_gpu_blocks=blocks), loaded=loaded)
    except ValueError as e:  # the config refuses it (V1's null block), or V1 a pool too small for max_model_len
        return Probe(blocks, False, 0, f"the engine refuses it: {e}")
    runner = WorkloadRunner(engine, search.workload) if search.workload else None
    start = time.perf_counter()

    def add_manual(step: int) -> None:
        for m in search.manual:
            if m.step == step:
                params = SamplingParams(max_tokens=m.max_tokens, ignore_eos=m.ignore_eos, n=m.n)
                engine.add_request(m.prompt, params, m.request_id, priority=m.priority)

    def finished() -> bool:
        return runner.done() if runner else not engine.has_unfinished_requests()

    def interrupted() -> bool:
        return (should_stop is not None and should_stop()) or (
            time_budget_s is not None and time.perf_counter() - start > time_budget_s
        )

    add_manual(0)
    while not finished():
        if engine.step_count >= MAX_STEPS:
            return Probe(blocks, False, engine.step_count, f"it had not finished after {MAX_STEPS} steps")
        if interrupted():
            return None
        try:
            report = runner.step() if runner else engine.step()
            add_manual(engine.step_count)
        except ValueError as e:  # a request this pool's engine refuses (V1 fits max_model_len to the pool)
            return Probe(blocks, False, engine.step_count, f"the engine refuses a request: {e}")
        if on_step is not None:
            on_step(engine.step_count)
        if report.preempted:
            victim = report.preempted[0].request_id
            return Probe(blocks, False, engine.step_count, f"req {victim} preempted at step {engine.step_count}")
        turned_away = next((o for o in report.finished if o.message), None)
        if turned_away is not None:
            what = f"req {turned_away.request_id} turned away: {turned_away.message}"
            return Probe(blocks, False, engine.step_count, what)
    return Probe(blocks, True, engine.step_count, f"ran to its end in {engine.step_count} steps, no preemption")
