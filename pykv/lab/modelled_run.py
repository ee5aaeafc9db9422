"""The run a Lab holds, priced on a modelled GPU target: what the live views show beside the measured figures (the
modelled metrics row, the step's modelled narration, the modelled columns of the requests and preemption tables),
computed here so that the views only draw it. Modelled, never measured: the tiny model still produced every token.

``modelled_run(lab, est)`` is a pure function of the Lab's history up to its cursor and of the target, memoised
beside the Lab: each step's price is kept per Lab and target against the snapshot it priced, so a Play tick prices
one new step (not the whole history), and a rerun that shows the same steps (a widget, a tab) prices nothing::

    lab.snapshots:  [0]   [1]   [2]   ...   [cursor]   ...   [head]
    step_ms:              [0]   [1]   ...   [cursor - 1]               step_ms[k]: the step that led to snapshots[k + 1]

The memo holds the snapshots weakly (a Lab's released history is never kept alive by it) and goes with its Lab; an
entry counts only while its snapshot is the very object at that place in the Lab's history (the Lab holds that
object, so its identity cannot be taken by another), so a history rewritten from a step on is priced again from
there.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from functools import cached_property

from pykv.border.snapshot import Snapshot
from pykv.gpu_model import Estimate, ModelShape, detect_gpu, estimate
from pykv.gpu_model.estimate import TORCH_DTYPES
from pykv.gpu_model.schedule import ModelledBill, RequestTimes, bills, request_times
from pykv.lab.lab import Lab


@dataclass(frozen=True, eq=False)
class ModelledRun:
    """A Lab's history from step 0 to its cursor, priced on one target."""

    est: Estimate
    snapshots: tuple[Snapshot, ...]  # the steps priced: snapshots[0] is step 0, snapshots[-1] the one on screen
    step_ms: tuple[float, ...]  # step_ms[k]: the step that led to snapshots[k + 1]
    bills: tuple[ModelledBill, ...]  # every preemption so far, billed

    @property
    def label(self) -> str:
        return self.est.label

    @property
    def clock_ms(self) -> float:
        """The modelled time of every step so far."""
        return sum(self.step_ms)

    @property
    def this_step_ms(self) -> float | None:
        """The modelled time of the step on screen; None at step 0 (no step led to it)."""
        return self.step_ms[-1] if self.step_ms and self.snapshots[-1].report else None

    @cached_property
    def request_times(self) -> dict[str, RequestTimes]:
        """Each request's modelled TTFT and TPOT (computed when first asked for: only the Requests tab shows them)."""
        return request_times(self.snapshots, self.step_ms)


@dataclass
class _Priced:
    """One Lab's history priced on one target: ``steps[k]`` is (the snapshot it priced, weakly; its step time);
    ``last`` the snapshots and bills of the last result (weakly too), so an unchanged history is not billed again.
    Changed only under ``_lock``, by ``modelled_run``."""

    steps: list[tuple[weakref.ref[Snapshot], float]] = field(default_factory=list)
    last: tuple[tuple[weakref.ref[Snapshot], ...], tuple[ModelledBill, ...]] = ((), ())


_lock = threading.Lock()
_memo: weakref.WeakKeyDictionary[Lab, dict[str, _Priced]] = weakref.WeakKeyDictionary()


def modelled_run(lab: Lab, est: Estimate) -> ModelledRun:
    """``lab``'s history up to its cursor priced on ``est`` (see the module's docstring for the memo)."""
    history = tuple(lab.snapshots[: lab.cursor + 1])
    with _lock:
        priced = _memo.setdefault(lab, {}).setdefault(est.label, _Priced())
        kept, (last_snaps, last_bills) = list(priced.steps), priced.last
    steps = [
        kept[k] if k < len(kept) and kept[k][0]() is snap else (weakref.ref(snap), _step_ms(est, snap))
        for k, snap in enumerate(history[1:])
    ]
    step_ms = tuple(ms for _, ms in steps)
    if len(last_snaps) == len(history) and all(ref() is snap for ref, snap in zip(last_snaps, history)):
        billed = last_bills
    else:
        reports = [s.report for s in history[1:] if s.report is not None]
        billed = tuple(bills(est, reports, history[-1].block_size))
    with _lock:
        priced.steps = steps + kept[len(steps) :]  # later steps priced before (Back) stay: checked when used
        priced.last = (tuple(weakref.ref(s) for s in history), billed)
    return ModelledRun(est, history, step_ms, billed)


def _step_ms(est: Estimate, snap: Snapshot) -> float:
    return est.step_ms(snap.report, snap.block_size) if snap.report else 0.0


@dataclass(frozen=True)
class RealGpuStep:
    """The step on screen as measured on a real GPU, beside the cost model's prediction for that very GPU running the
    shipped model's shape (``predicted_ms`` and ``label`` None: the catalogue has no such GPU)."""

    device_name: str
    measured_ms: float  # the whole step, measured
    forward_ms: float  # its forward pass, measured
    predicted_ms: float | None  # modelled
    label: str | None  # the target predicted on


def real_gpu_step(lab: Lab) -> RealGpuStep | None:
    """On CUDA, the step on screen measured beside its prediction (the GPU found by its name); None on a CPU or at
    step 0."""
    snap = lab.view
    if not lab.config.device.startswith("cuda") or snap.report is None or lab.loaded is None:
        return None
    import torch

    name = torch.cuda.get_device_name(lab.config.device)
    shape = ModelShape.from_file(lab.loaded.path / "config.json", "the shipped model")
    return real_gpu_prediction(name, shape, lab.config.dtype, snap)


def real_gpu_prediction(device_name: str, shape: ModelShape, dtype: str, snap: Snapshot) -> RealGpuStep:
    """``snap``'s step measured on ``device_name`` (it ran there) beside the cost model's prediction for that GPU."""
    report = snap.report
    assert report is not None, "a step measured on a GPU has a report"
    gpu = detect_gpu(device_name)
    est = estimate(gpu, shape, TORCH_DTYPES.get(dtype, dtype)) if gpu is not None else None
    return RealGpuStep(
        device_name,
        report.step_time_s * 1e3,
        report.forward_time_s * 1e3,
        est.step_ms(report, snap.block_size) if est is not None else None,
        est.label if est is not None else None,
    )
