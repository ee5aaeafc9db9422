"""LessonPlayer: plays a lesson step by step on a live engine, keeping every visited step's state.

The rule that makes Back exact: a lesson step's StepState is computed once, from the state before
it, and kept. Its Lab is never changed after the step is left — the next step that must move the
engine works on ``lab.fork()`` (which takes the engine over and leaves the old Lab's snapshots as
they were); ``configure`` builds a new Lab::

    states:  [0] ──fork──> [1] ──(no engine action: same Lab)──> [2] ──configure: new Lab──> [3]
               ^ index: the step on screen; prev() / goto() only move it

Actions run in order when a step is first entered. An action that fails (a run that ends before a
preemption, a prompt the engine refuses) stops that step's actions and becomes a failed check and an
entry of ``StepState.errors``; the player itself never raises for it. A step's ``predict`` block is
answered by the value its path reads after the actions (``StepState.prediction``); a value that is
none of the choices is a failed check, as a broken ``expect`` is.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykv.border.config import EngineConfig, app_owned_knobs
from pykv.border.limits import MAX_STEPS
from pykv.border.workload import Workload, WorkloadRequest
from pykv.engine.model.loader import DTYPES, LoadedModel
from pykv.lab.lab import Lab, has_preempted, lab_config
from pykv.lessons.format.errors import LessonError, PathError
from pykv.lessons.format.predict import CHECK_DESCRIPTION, Prediction, PredictionResult, answer_text
from pykv.lessons.format.schema import Lesson, LessonStep
from pykv.lessons.format.step_blocks import (
    Action,
    AddRequest,
    Check,
    Configure,
    RunAction,
    RunUntil,
    StepAction,
    Tokenize,
)
from pykv.lessons.run.runs import RunSummary, side_run
from pykv.lessons.values.checks import CheckResult, evaluate, render
from pykv.lessons.values.paths import Scope, resolve
from pykv.lessons.values.tokens import TokenDiff, tokenize_pair


@dataclass(frozen=True)
class StepState:
    """The state after steps[0..index]'s actions. Never changed once built."""

    index: int
    step: LessonStep
    lab: Lab  # cursor == head at this step's engine step; do not step it (fork() it to explore)
    runs: dict[str, RunSummary]  # side runs saved so far, by name
    tokens: dict[str, TokenDiff]  # tokenizations saved so far, by name
    checks: list[CheckResult]  # failed actions first, the step's expect checks in order, then a failed prediction
    narration: str  # the step's Markdown with its {{ }} templates filled
    notes: str | None  # speaker notes (Markdown)
    errors: list[str]  # failed actions and templates that could not be filled
    scope: Scope  # what paths read here (pykv.lessons.values.paths.resolve(path, state.scope))
    prediction: PredictionResult | None = None  # the step's predict block, answered by its actions' outcome

    @property
    def passed(self) -> bool:
        return not self.errors and all(c.passed for c in self.checks)

    @property
    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]


def base_config_for(loaded: LoadedModel, base: EngineConfig | None = None) -> EngineConfig:
    """The lab's defaults plus what the app owns (model, device, dtype, attention backend: flags in
    EngineConfig's table); without ``base`` those are read off the loaded model."""
    if base is not None:
        return lab_config(**{k.name: getattr(base, k.name) for k in app_owned_knobs()})
    param = next(loaded.model.parameters())
    dtype = next((name for name, d in DTYPES.items() if d == param.dtype), "float32")
    device = "cpu" if param.device.type == "cpu" else str(param.device)
    return lab_config(model=str(loaded.path), device=device, dtype=dtype)


class LessonPlayer:
    """``player.index`` is the lesson step on screen; ``player.state`` its StepState."""

    def __init__(
        self,
        lesson: Lesson,
        loaded: LoadedModel,
        base_config: EngineConfig | None = None,
        action_budget_s: float | None = None,
    ) -> None:
        self.lesson, self.loaded = lesson, loaded
        self.action_budget_s = action_budget_s  # wall time one engine-running action may take (None: unbounded)
        self.workload = lesson.build_workload()
        try:
            self.config = base_config_for(loaded, base_config).replace(**lesson.config, seed=lesson.seed)
        except ValueError as e:
            raise LessonError(str(lesson.path), "config", str(e)) from None
        self.restart()

    # ---- navigation -----------------------------------------------------------------------

    @property
    def state(self) -> StepState:
        return self._states[self.index]

    @property
    def states(self) -> list[StepState]:
        """Every step computed so far, in order (a copy)."""
        return list(self._states)

    @property
    def num_steps(self) -> int:
        return len(self.lesson.steps)

    def at_end(self) -> bool:
        return self.index == self.num_steps - 1

    def next(self) -> bool:
        if self.at_end():
            return False
        self.goto(self.index + 1)
        return True

    def prev(self) -> bool:
        if self.index == 0:
            return False
        self.index -= 1
        return True

    def goto(self, k: int) -> int:
        """Show lesson step ``k`` (clamped to the lesson), playing the steps before it as needed."""
        k = max(0, min(int(k), self.num_steps - 1))
        while len(self._states) <= k:
            self._states.append(self._play(len(self._states)))
        self.index = k
        return k

    def restart(self) -> None:
        """Forget every state and play step 0 again on a fresh engine."""
        self._states: list[StepState] = []
        self.index = 0
        self._states.append(self._play(0))

    # ---- playing one step -----------------------------------------------------------------

    def _play(self, index: int) -> StepState:
        step = self.lesson.steps[index]
        prev = self._states[index - 1] if index else None
        lab = prev.lab if prev else Lab(self.config, self.loaded, seed=self.lesson.seed, workload=self.workload)
        owned = prev is None  # may this step move `lab`? (an earlier state's Lab must be forked first)
        runs, tokens = dict(prev.runs) if prev else {}, dict(prev.tokens) if prev else {}
        errors, failed = [], []
        for j, action in enumerate(step.actions):
            if not owned and isinstance(action, (StepAction, RunUntil, AddRequest)):
                lab, owned = lab.fork(), True
            try:
                if isinstance(action, Configure):
                    lab, owned = self._configured(lab, action.changes), True
                else:
                    self._apply(action, lab, runs, tokens)
            except Exception as e:  # noqa: BLE001 - any failure is shown as a failed check, never a crash
                message = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
                errors.append(f"actions[{j}] ({action.describe()}): {message}")
                failed.append(CheckResult(f"action: {action.describe()}", False, None, None, None, message))
                break
        scope = self._scope(lab, runs, tokens)
        checks = failed + [evaluate(check, scope) for check in step.expect]
        prediction = None
        if step.predict is not None:
            prediction, problem = _answered(step.predict, scope)
            checks += [problem] if problem is not None else []
        narration, template_errors = render(step.narration, scope)
        return StepState(
            index=index,
            step=step,
            lab=lab,
            runs=runs,
            tokens=tokens,
            checks=checks,
            narration=narration,
            notes=step.notes,
            errors=errors + template_errors,
            scope=scope,
            prediction=prediction,
        )

    def _configured(self, lab: Lab, changes: dict) -> Lab:
        """A new Lab at engine step 0: new config, same workload, the requests added so far kept."""
        return Lab(
            lab.config.replace(**changes),
            self.loaded,
            seed=self.lesson.seed,
            manual=tuple(lab.manual),
            workload=self.workload,
        )

    def _apply(self, action: Action, lab: Lab, runs: dict, tokens: dict) -> None:
        if isinstance(action, StepAction):
            self._run(lab, lambda s: False, action.count)
        elif isinstance(action, RunUntil):
            self._run_until(action.until, lab, runs, tokens)
        elif isinstance(action, AddRequest):
            lab.add_request(action.prompt, action.max_tokens, action.request_id, action.ignore_eos)
        elif isinstance(action, RunAction):
            config = lab.config.replace(**action.config)
            workload = action.workload.build(self.lesson.seed) if action.workload else self._with_manual(lab)
            runs[action.name] = side_run(action.name, config, workload, self.loaded)
        elif isinstance(action, Tokenize):
            tokens[action.name] = tokenize_pair(self.loaded, action.a, action.b, lab.config.block_size)

    def _run_until(self, until, lab: Lab, runs: dict, tokens: dict) -> None:
        start = lab.cursor
        if until == "preemption":
            if not self._run(lab, has_preempted, MAX_STEPS):
                raise ValueError(self._stopped(lab, start, "before any preemption"))
        elif until == "end":
            self._run(lab, lambda s: False, MAX_STEPS)
            if not lab.engine_done():
                raise ValueError(f"the run did not end within {MAX_STEPS} engine steps")
        else:
            check: Check = until
            holds = lambda: evaluate(check, self._scope(lab, runs, tokens)).passed  # noqa: E731
            if not holds() and not self._run(lab, lambda s: holds(), MAX_STEPS):
                last = evaluate(check, self._scope(lab, runs, tokens))
                seen = last.error or f"last value {last.actual!r}"
                raise ValueError(self._stopped(lab, start, f"before {check.describe()} held ({seen})"))

    def _run(self, lab: Lab, stop, max_steps: int) -> bool:
        """``lab.run_until`` within the action's time budget; a run the budget cut short is a failed action."""
        reached = lab.run_until(stop, max_steps=max_steps, time_budget_s=self.action_budget_s)
        if lab.stopped_early and "time budget" in lab.stopped_early:
            raise ValueError(
                f"the action stopped at engine step {lab.cursor}: {lab.stopped_early} for one lesson "
                "action on this server"
            )
        return reached

    @staticmethod
    def _stopped(lab: Lab, start: int, what: str) -> str:
        if lab.engine_done():
            return f"the run ended at engine step {lab.cursor} {what}"
        return f"{lab.cursor - start} engine steps (the most one action may run) passed {what}"

    def _with_manual(self, lab: Lab) -> Workload:
        """The lesson's workload plus the requests added by hand so far, each arriving when it was added."""
        extra = [
            WorkloadRequest(
                prompt=m.prompt,
                max_tokens=m.max_tokens,
                arrival_step=m.step,
                request_id=m.request_id,
                ignore_eos=m.ignore_eos,
                n=m.n,
                priority=m.priority,
            )
            for m in lab.manual
        ]
        return self.workload.model_copy(update={"requests": list(self.workload.requests) + extra})

    def _scope(self, lab: Lab, runs: dict, tokens: dict) -> Scope:
        assert lab.cursor == lab.head, "the player keeps every Lab at its head"
        arrivals = {r.request_id: r.arrival_step for r in self.workload.requests if r.request_id is not None}
        arrivals |= {m.request_id: m.step for m in lab.manual}
        return Scope(
            view=lab.view,
            config=lab.config,
            done=lab.engine_done(),
            runs=dict(runs),
            tokens=dict(tokens),
            arrivals=arrivals,
            history=tuple(lab.snapshots[: lab.cursor + 1]),
        )


def _answered(prediction: Prediction, scope: Scope) -> tuple[PredictionResult, CheckResult | None]:
    """The prediction's answer in ``scope`` (after the step's actions), and a failed check when that answer
    cannot be read or is none of the choices (the lesson is broken: the CI replay must say so)."""
    try:
        answer, error = answer_text(resolve(prediction.answer, scope)), None
    except PathError as e:
        answer, error = None, str(e)
    result = PredictionResult.of(prediction, answer)
    if result.correct is not None:
        return result, None
    if error is None:
        error = (
            f"{prediction.answer} reads {answer!r}, which is none of the choices "
            f"({', '.join(repr(c) for c in prediction.choices)})"
        )
    return result, CheckResult(CHECK_DESCRIPTION, False, answer, list(prediction.choices), prediction.why, error)


def replay(lesson: Lesson, loaded: LoadedModel, base_config: EngineConfig | None = None) -> list[StepState]:
    """Play every step in order, headless (CI): the list of StepStates, one per lesson step."""
    player = LessonPlayer(lesson, loaded, base_config)
    player.goto(player.num_steps - 1)
    return player.states
