"""Lab: one browser session's engine, workload, manual-request log and the snapshot of every step:
the app's one history (the lesson player reuses Labs rather than keeping its own).

No Streamlit here, so it is tested (and benchmarked) on its own.

The rule that makes Back and deep links work: the engine is deterministic, so the state at step k
is a function of (config, preset, seed, manual requests added at steps <= k). ``snapshots[k]`` is
the state after step k *and* after the manual requests added at step k::

    snapshots:  [0] [1] [2] ... [head]        the engine itself is at ``head``
                         ^cursor              the step on screen

Step with cursor < head just moves the cursor; Back moves it back. Changing the past (adding a
request while looking at an earlier step) replays from step 0 to the cursor, dropping the rest.

``fork()`` hands the live engine to a new Lab at the same step; the old Lab keeps its history
(snapshots, cursor) untouched and replays an engine of its own only if one is asked for again.
The lesson player forks once per lesson step, so Back shows the very objects it showed before.
``branch()`` copies the history without the engine and never touches the Lab it copies: what a shared
Lab (a class's lesson, read by many sessions) hands out.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

from pykv.border.config import EngineConfig
from pykv.border.limits import MAX_STEPS
from pykv.border.request import SamplingParams
from pykv.border.snapshot import Snapshot
from pykv.border.workload import Workload, make_workload
from pykv.engine.kv.sizing import engine_sizing
from pykv.engine.llm_engine import LLMEngine
from pykv.engine.model.loader import LoadedModel
from pykv.lab.workload_runner import WorkloadRunner
from pykv_kernels.launch_record import LaunchRecord

LAB_LOG_STATS_INTERVAL = 10  # the lab shows vLLM's periodic stats line every 10 steps (headless runs write none)

# History memory. A Lab keeps one Snapshot per step, at most MAX_STEPS (3000) of them. Measured on the
# default config (tiny model, 64 blocks, storm preset, run to its end at step 257): 42 KB per snapshot on
# average (objects shared between consecutive snapshots counted once), 102 KB for the largest one. So one
# session's history is capped near 3000 x 45 KB = ~135 MB (worst case ~300 MB at the largest snapshot),
# on top of its KV pools (sidebar caps: 512 device + 4096 CPU blocks, ~32 KB a block on the tiny model).
SNAPSHOT_BYTES_ESTIMATE = 45_000  # bytes of one recorded step on the default config (see above)


def memory_estimate(config: EngineConfig, loaded: LoadedModel) -> int:
    """Bytes a Lab on ``config`` may come to hold, known before anything is allocated: its KV pools
    (device + CPU: the swap pool or the offloading tier, sized as its engine sizes them: ``engine_sizing``) plus a
    full history of MAX_STEPS snapshots."""
    return engine_sizing(config, loaded.config).kv_bytes + MAX_STEPS * SNAPSHOT_BYTES_ESTIMATE


def lab_config(**changes: Any) -> EngineConfig:
    """EngineConfig's defaults plus the lab's own (stats log lines on), with ``changes`` applied."""
    return EngineConfig(**{"log_stats_interval": LAB_LOG_STATS_INTERVAL, **changes})


def has_preempted(snapshot: Snapshot) -> bool:
    """The step that led to ``snapshot`` preempted someone."""
    return bool(snapshot.report and snapshot.report.preempted)


def admitted(previous: Snapshot | None, snapshot: Snapshot) -> list[str]:
    """The requests waiting before the step that led to ``snapshot`` that it scheduled: admitted (a preempted one,
    re-admitted), in batch order."""
    if previous is None or snapshot.report is None:
        return []
    waiting = set(previous.queues.get("waiting", []))
    return [c.request_id for c in snapshot.report.chunks if c.request_id in waiting and not c.orphaned]


def steps_waited(snapshots: list[Snapshot], request_id: str, step: int) -> int:
    """How many steps before ``step`` ended with ``request_id`` in the waiting queue, counted back without a gap."""
    k = step - 1
    while k >= 0 and request_id in snapshots[k].queues.get("waiting", []):
        k -= 1
    return step - 1 - k


@dataclass(frozen=True)
class ManualRequest:
    step: int  # added when the engine was at this step (before the next step ran)
    prompt: str
    max_tokens: int
    request_id: str
    ignore_eos: bool = False
    n: int = 1  # parallel sampling: sequences forked on the first token
    priority: int = 0  # read by preemption_victim="priority"

    def params(self) -> SamplingParams:
        return SamplingParams(max_tokens=self.max_tokens, ignore_eos=self.ignore_eos, n=self.n)


class Lab:
    """``preset`` names a pykv.border.workload preset; ``workload`` (which wins) gives a Workload object."""

    def __init__(
        self,
        config: EngineConfig,
        loaded: LoadedModel | None = None,
        preset: str | None = "storm",
        seed: int = 0,
        manual: tuple[ManualRequest, ...] = (),
        workload: Workload | None = None,
    ) -> None:
        if workload is not None:
            preset = None
        self.config, self.loaded, self.preset, self.seed = config, loaded, preset, seed
        self.workload = workload or (make_workload(preset, seed=seed) if preset else None)  # ValueError: unknown preset
        self.manual: list[ManualRequest] = list(manual)  # changed by add_request / _rewind only
        self.stopped_early: str | None = None  # why the last goto / run_until stopped short (None: it did not)
        self._restart()

    def check_workload(self) -> None:
        """Raise the engine's ValueError now if a request of the workload will be refused when it arrives
        (e.g. chunked prefill off and a budget smaller than a prompt), instead of at that step."""
        for r in self.workload.requests if self.workload else []:
            prompt = r.prompt if r.prompt is not None else r.prompt_token_ids
            assert prompt is not None  # a WorkloadRequest has exactly one of the two
            self.engine.check_request(
                prompt, SamplingParams(max_tokens=r.max_tokens, ignore_eos=r.ignore_eos), r.request_id
            )

    # ---- engine lifetime ------------------------------------------------------------------

    @property
    def engine(self) -> LLMEngine:
        return self._replay_engine() if self._engine is None else self._engine

    @property
    def live_engine(self) -> LLMEngine | None:
        """The engine if this Lab holds one, else None: never replays one (unlike ``engine``)."""
        return self._engine

    @property
    def runner(self) -> WorkloadRunner | None:
        if self._engine is None:
            self._replay_engine()
        return self._runner

    def _restart(self) -> None:
        self._done_when_detached = False
        # None after fork() (the engine went to the child) or release(): replay one on demand
        self._engine: LLMEngine | None = LLMEngine(self.config, loaded=self.loaded, stepwise=True)
        self.loaded = self._engine.loaded
        self._runner = WorkloadRunner(self._engine, self.workload) if self.workload else None
        self._apply_manual(0)
        self.snapshots: list[Snapshot] = [self.engine.snapshot()]
        self.kernel_launches: dict[int, tuple[LaunchRecord, ...]] = {}  # step -> its layer-0 kernel launches
        self.cursor = 0  # the step on screen

    def _replay_engine(self) -> LLMEngine:
        """A fresh engine brought to ``head``; the recorded snapshots stay exactly as they were."""
        engine = self._engine = LLMEngine(self.config, loaded=self.loaded, stepwise=True)
        self._runner = WorkloadRunner(engine, self.workload) if self.workload else None
        self._apply_manual(0)
        while engine.step_count < self.head:  # plain steps: the replayed steps' launches are recorded already
            self._runner.step() if self._runner else engine.step()
            self._apply_manual(engine.step_count)
        return engine

    def release(self) -> None:
        """Give back the engine (KV pools) and the recorded history: the Lab goes back to step 0 and would
        replay an engine only if asked for one. For a session that is gone but not yet dropped."""
        self.snapshots, self.cursor, self.kernel_launches = self.snapshots[:1], 0, {}
        self._engine = self._runner = None
        self._done_when_detached = False

    def fork(self) -> "Lab":
        """A new Lab at the same step that takes over this Lab's engine. This Lab's snapshots, cursor
        and manual log never change because of the fork; it replays an engine only if asked for one."""
        child = copy.copy(self)
        child.snapshots, child.manual = list(self.snapshots), list(self.manual)
        child.kernel_launches = dict(self.kernel_launches)
        if self._engine is not None:
            self._done_when_detached = self.engine_done()
            self._engine = self._runner = None
        return child

    def branch(self) -> "Lab":
        """A new Lab at the same step that never touches this one: it replays an engine of its own when it
        first needs one. For a Lab other sessions read (a class's shared lesson), whose engine must stay."""
        child = copy.copy(self)
        child.snapshots, child.manual = list(self.snapshots), list(self.manual)
        child.kernel_launches = dict(self.kernel_launches)
        child._done_when_detached = self.engine_done()
        child._engine = child._runner = None
        return child

    def _apply_manual(self, step: int) -> None:
        for m in self.manual:
            if m.step == step:
                self.engine.add_request(m.prompt, m.params(), m.request_id, priority=m.priority)

    def _advance(self) -> Snapshot:
        """Run the engine one step past ``head`` and record the snapshot."""
        recorded = self.runner.step_recording_kernels() if self.runner else self.engine.step_recording_kernels()
        self._apply_manual(self.engine.step_count)
        snap = self.engine.snapshot(recorded.report)
        self.snapshots.append(snap)
        if recorded.launches:
            self.kernel_launches[self.head] = recorded.launches
        return snap

    # ---- where we are ---------------------------------------------------------------------

    @property
    def head(self) -> int:
        return len(self.snapshots) - 1

    @property
    def view(self) -> Snapshot:
        return self.snapshots[self.cursor]

    @property
    def previous(self) -> Snapshot | None:
        return self.snapshots[self.cursor - 1] if self.cursor else None

    def engine_done(self) -> bool:
        """No request left to run and none still to arrive."""
        if self._engine is None:
            return self._done_when_detached
        if self.runner is not None:
            return self.runner.done()
        return not self.engine.has_unfinished_requests()

    def at_end(self) -> bool:
        return self.cursor == self.head and (self.engine_done() or self.head >= MAX_STEPS)

    # ---- controls -------------------------------------------------------------------------

    def step(self) -> bool:
        """One step forward; False (and nothing changes) when there is nothing left to run."""
        if self.cursor < self.head:
            self.cursor += 1
            return True
        if self.at_end():
            return False
        self._advance()
        self.cursor = self.head
        return True

    def back(self) -> bool:
        if self.cursor == 0:
            return False
        self.cursor -= 1
        return True

    def goto(self, step: int, time_budget_s: float | None = None, should_stop: Callable[[], bool] | None = None) -> int:
        """Show step ``step`` (replaying forward as needed; stops early at the end, when the time budget
        is spent or when ``should_stop()`` says the session is gone). Returns the step shown;
        ``stopped_early`` says why it is short of ``step`` for a reason other than the run's end."""
        step, start, self.stopped_early = max(0, step), time.perf_counter(), None
        while self.head < step and not (self.engine_done() or self.head >= MAX_STEPS):
            if self._interrupted(start, time_budget_s, should_stop):
                break
            self._advance()
        self.cursor = min(step, self.head)
        return self.cursor

    def run_until(
        self,
        stop: Callable[[Snapshot], bool],
        max_steps: int = MAX_STEPS,
        time_budget_s: float | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> bool:
        """Step until ``stop(snapshot)`` holds (True) or the run ends / the budget is spent / the session
        is gone (False; ``stopped_early`` then says which, None when the run simply ended)."""
        start, self.stopped_early = time.perf_counter(), None
        for _ in range(max_steps):
            if not self.step():
                return False
            if stop(self.view):
                return True
            if self._interrupted(start, time_budget_s, should_stop):
                return False
        if not self.at_end():
            self.stopped_early = f"it reached the limit of {max_steps} steps for one action"
        return False

    def _interrupted(self, start: float, time_budget_s: float | None, should_stop: Callable[[], bool] | None) -> bool:
        """Sets ``stopped_early`` and returns True when the action must stop before its next step."""
        if should_stop is not None and should_stop():
            self.stopped_early = "its session ended"
        elif time_budget_s is not None and time.perf_counter() - start > time_budget_s:
            self.stopped_early = f"it used its time budget of {time_budget_s:g} s"
        return self.stopped_early is not None

    def run_to_next_preemption(
        self, time_budget_s: float | None = 30.0, should_stop: Callable[[], bool] | None = None
    ) -> bool:
        return self.run_until(has_preempted, time_budget_s=time_budget_s, should_stop=should_stop)

    def run_to_next_admission(
        self, time_budget_s: float | None = 30.0, should_stop: Callable[[], bool] | None = None
    ) -> bool:
        """Step until a step admits a request that was waiting (past a stall, where the waiting queue's head waits)."""
        return self.run_until(
            lambda s: bool(admitted(self.previous, s)), time_budget_s=time_budget_s, should_stop=should_stop
        )

    def run_to_end(self, time_budget_s: float | None = 60.0, should_stop: Callable[[], bool] | None = None) -> None:
        self.run_until(lambda s: False, time_budget_s=time_budget_s, should_stop=should_stop)

    def reset(self) -> None:
        """Back to step 0 with the same config and workload; requests added by hand are dropped."""
        self.manual = []
        self._restart()

    def add_request(
        self,
        prompt: str,
        max_tokens: int,
        request_id: str | None = None,
        ignore_eos: bool = False,
        n: int = 1,
        priority: int = 0,
    ) -> str:
        """Queue a request by hand at the step on screen (rewriting any later steps); ids default to
        m1, m2, ... Raises ValueError with the engine's message on bad input; then nothing changes."""
        params = SamplingParams(max_tokens=int(max_tokens), ignore_eos=bool(ignore_eos), n=n)  # ValueError if bad
        if request_id is None:
            numbers = [int(m.request_id[1:]) for m in self.manual if re.fullmatch(r"m\d+", m.request_id)]
            request_id = f"m{max(numbers, default=0) + 1}"
        request_id = str(request_id)
        taken: set[str | None] = {m.request_id for m in self.manual if m.step <= self.cursor}
        taken |= {r.request_id for r in (self.workload.requests if self.workload else [])}
        if request_id in taken:
            raise ValueError(
                f"Request id {request_id!r} is already in use (by the workload or an earlier request); pick another."
            )
        if self.cursor < self.head:
            # Check the prompt before throwing the later steps away (tokenize + limits; no state change).
            self.engine.check_request(prompt, params, request_id, priority)
            self._rewind(self.cursor)
        self.engine.add_request(prompt, params, request_id, priority)  # ValueError: nothing logged
        self.manual.append(
            ManualRequest(self.cursor, prompt, params.max_tokens, request_id, params.ignore_eos, params.n, priority)
        )
        self.snapshots[self.cursor] = self.engine.snapshot(self.view.report)
        return request_id

    def _rewind(self, step: int) -> None:
        """Replay from scratch to ``step`` and forget what came after it."""
        self.manual = [m for m in self.manual if m.step <= step]
        self._restart()
        self.goto(step)
