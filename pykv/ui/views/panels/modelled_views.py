"""The modelled target beside every measured figure of the live views: a row of modelled metrics, the step's
modelled narration, and, on a CUDA device, the measured step beside the model's prediction for that very GPU and the
shipped model. What they show is priced beside the Lab (``pykv.lab.modelled_run``): this module only draws it.

Measured figures are never replaced or hidden: the modelled ones are added beside them.
"""

from __future__ import annotations

from pykv.border.snapshot import Snapshot
from pykv.border.units import fmt_model_ms
from pykv.gpu_model.schedule import per_token_prefill_us
from pykv.lab.modelled_run import ModelledRun, RealGpuStep
from pykv.ui.views.widgets.metric_row import metric_row
from pykv.viz.modelled import modelled_narration, modelled_strip


def strip(snap: Snapshot, modelled: ModelledRun, key: str) -> None:
    tokens = snap.report.num_batched_tokens if snap.report else None
    metric_row(modelled_strip(modelled.label, modelled.this_step_ms, tokens, modelled.clock_ms, modelled.bills), key)


def narration_lines(snap: Snapshot, modelled: ModelledRun) -> list[str]:
    est = modelled.est
    return modelled_narration(snap, modelled.label, modelled.bills, per_token_prefill_us(est), est.link.name)


def real_gpu_note(step: RealGpuStep) -> str:
    """The step measured on a real GPU beside the cost model's prediction for it (or why there is none)."""
    if step.predicted_ms is None:
        return f"Measured on {step.device_name}; the cost model's catalogue has no such GPU, so no prediction for it."
    return (
        f"Real GPU: this step measured {step.measured_ms:.2f} ms on {step.device_name} (forward "
        f"{step.forward_ms:.2f} ms); the cost model predicts {fmt_model_ms(step.predicted_ms)} "
        f"(modelled {step.label}). bench/gpu_check.py records both for a whole run."
    )
