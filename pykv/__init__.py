"""pykv: a small vLLM-style inference engine over a paged KV cache, built to show preemption."""

from pykv.config import EngineConfig
from pykv.engine import LLMEngine
from pykv.loader import default_model_path, load_model
from pykv.request import RequestOutput, RequestStatus, SamplingParams
from pykv.snapshot import Snapshot, StepReport

__all__ = [
    "EngineConfig",
    "LLMEngine",
    "RequestOutput",
    "RequestStatus",
    "SamplingParams",
    "Snapshot",
    "StepReport",
    "default_model_path",
    "load_model",
]
