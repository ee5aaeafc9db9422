"""WorkloadRunner: feeds a workload to an engine step by step, adding each request when it arrives."""

from __future__ import annotations

from typing import Callable

from pykv.border.request import SamplingParams
from pykv.border.step_report import StepReport
from pykv.border.workload import Workload
from pykv.engine.llm_engine import LLMEngine, RecordedStep


class WorkloadRunner:
    """Feeds a workload to an engine: before each step, adds the requests that have arrived."""

    def __init__(self, engine: LLMEngine, workload: Workload) -> None:
        self.engine = engine
        self.pending = sorted(workload.requests, key=lambda r: r.arrival_step)  # stable: file order within a step
        self.request_ids: list[str] = []

    def done(self) -> bool:
        return not self.pending and not self.engine.has_unfinished_requests()

    def admit_arrivals(self) -> None:
        """Add the requests that have arrived by the engine's step."""
        while self.pending and self.pending[0].arrival_step <= self.engine.step_count:
            r = self.pending.pop(0)
            prompt = r.prompt if r.prompt is not None else r.prompt_token_ids
            assert prompt is not None  # a WorkloadRequest has exactly one of the two
            params = SamplingParams(max_tokens=r.max_tokens, ignore_eos=r.ignore_eos, n=r.n)
            self.request_ids.append(self.engine.add_request(prompt, params, r.request_id, priority=r.priority))

    def step(self) -> StepReport:
        self.admit_arrivals()
        return self.engine.step()

    def step_recording_kernels(self) -> RecordedStep:
        """``step()``, keeping the step's kernel launches (``LLMEngine.step_recording_kernels``)."""
        self.admit_arrivals()
        return self.engine.step_recording_kernels()

    def run(self, max_steps: int = 100_000, on_step: Callable[[StepReport], None] | None = None) -> list[StepReport]:
        reports: list[StepReport] = []
        while not self.done() and len(reports) < max_steps:
            reports.append(self.step())
            if on_step is not None:
                on_step(reports[-1])
        return reports
