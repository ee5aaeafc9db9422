"""What a pykv schedule would cost on a real GPU: a cost model for named GPUs and model shapes.

    from pykv.gpu_model import estimate
    est = estimate(gpu="H100-SXM", model="llama-3.1-8b", dtype="bf16", tp=1)
    est.prefill_ms(2048); est.decode_step_ms(batch=32, context=1024); est.copy_ms(2**30, "d2h")
    est.step_ms(step_report)  # a real pykv step, priced on the target

Every figure is modelled (never measured) and labelled so wherever it is shown. Pure Python: no
Streamlit, no plotly, no torch.
"""

from pykv.gpu_model.calibration import CALIBRATION, Calibration, calibration_rows
from pykv.gpu_model.estimate import DEFAULT_TARGET, Chunk, Estimate, StepCost, Target, estimate
from pykv.gpu_model.gpus import GPUS, GpuSpec, detect_gpu
from pykv.gpu_model.models import MODELS
from pykv.gpu_model.shapes import ModelShape

__all__ = [
    "CALIBRATION",
    "Calibration",
    "Chunk",
    "DEFAULT_TARGET",
    "Estimate",
    "GPUS",
    "GpuSpec",
    "MODELS",
    "ModelShape",
    "StepCost",
    "Target",
    "calibration_rows",
    "detect_gpu",
    "estimate",
]
