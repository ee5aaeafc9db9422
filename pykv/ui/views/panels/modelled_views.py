"""The modelled target beside every measured figure of the live views: a row of modelled metrics, the
step's modelled narration, modelled columns in the requests and preemption tables, and, on a CUDA
device, the measured step beside the model's prediction for that very GPU and the shipped model.

Measured figures are never replaced or hidden: the modelled ones are added beside them. Each Lab's
modelled step times are kept per target, checked by identity against its snapshots, so a Play tick
prices one new step, not the whole history.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from pykv.border.snapshot import Snapshot
from pykv.gpu_model import Estimate, ModelShape, Target, detect_gpu, estimate
from pykv.gpu_model.estimate import TORCH_DTYPES
from pykv.gpu_model.schedule import ModelledBill, bills, per_token_prefill_us, request_times
from pykv.lab.lab import Lab
from pykv.ui.views.widgets import target
from pykv.ui.views.widgets.metric_row import metric_row
from pykv.viz.modelled import fmt_model_ms, modelled_narration, modelled_strip


@dataclass(frozen=True)
class Modelled:
    """The Lab up to its cursor, priced on one target."""

    est: Estimate
    step_ms: list[float]  # step_ms[k]: the step that led to snapshots[k + 1]
    bills: list[ModelledBill]

    @property
    def label(self) -> str:
        return self.est.label


def _step_times(lab: Lab, est: Estimate) -> list[float]:
    """Modelled step times, cached for one lab and one target by the snapshots' ids (never the snapshots: a
    released lab's history must not stay pinned by this cache)."""
    key = (id(lab), est.label)
    then, cached = st.session_state.get("modelled_steps", (None, []))
    if then != key:
        cached = []
    out = []
    for k, snap in enumerate(lab.snapshots[1:]):
        if k < len(cached) and cached[k][0] == (id(snap), snap.step):
            out.append(cached[k][1])
        else:
            out.append(est.step_ms(snap.report, snap.block_size) if snap.report else 0.0)
    st.session_state["modelled_steps"] = (key, [((id(s), s.step), ms) for s, ms in zip(lab.snapshots[1:], out)])
    return out


def modelled_for(lab: Lab, chosen: Target | None = None) -> Modelled:
    est = target.current_estimate(chosen)
    times = _step_times(lab, est)[: lab.cursor]
    reports = [s.report for s in lab.snapshots[1 : lab.cursor + 1] if s.report is not None]
    return Modelled(est, times, bills(est, reports, lab.view.block_size))


def strip(lab: Lab, snap: Snapshot, modelled: Modelled, key: str) -> None:
    step_ms = modelled.step_ms[-1] if modelled.step_ms and snap.report else None
    tokens = snap.report.num_batched_tokens if snap.report else None
    metrics = modelled_strip(modelled.label, step_ms, tokens, sum(modelled.step_ms), modelled.bills)
    metric_row(metrics, key)


def narration_lines(snap: Snapshot, modelled: Modelled) -> list[str]:
    est = modelled.est
    return modelled_narration(
        snap, modelled.label, modelled.bills, est.kv_bytes_per_token_per_gpu, per_token_prefill_us(est), est.link.name
    )


def request_times_of(lab: Lab, modelled: Modelled):
    return request_times(lab.snapshots[: lab.cursor + 1], modelled.step_ms)


def real_gpu_note(lab: Lab, snap: Snapshot) -> str | None:
    """On CUDA: this step measured on the real GPU beside the model's prediction for that GPU (found by its
    name) running the shipped model's shape; None on a CPU or a GPU the catalogue lacks."""
    if not lab.config.device.startswith("cuda") or snap.report is None:
        return None
    import torch

    name = torch.cuda.get_device_name(lab.config.device)
    shape = ModelShape.from_file(lab.loaded.path / "config.json", "the shipped model")
    return real_gpu_comparison(name, shape, lab.config.dtype, snap)


def real_gpu_comparison(device_name: str, shape: ModelShape, dtype: str, snap: Snapshot) -> str:
    gpu = detect_gpu(device_name)
    if gpu is None:
        return f"Measured on {device_name}; the cost model's catalogue has no such GPU, so no prediction for it."
    est = estimate(gpu, shape, TORCH_DTYPES.get(dtype, dtype))
    predicted = est.step_ms(snap.report, snap.block_size)
    return (
        f"Real GPU: this step measured {snap.report.step_time_s * 1e3:.2f} ms on {device_name} (forward "
        f"{snap.report.forward_time_s * 1e3:.2f} ms); the cost model predicts {fmt_model_ms(predicted)} "
        f"(modelled {est.label}). bench/gpu_check.py records both for a whole run."
    )
