"""pykv: a small vLLM-style inference engine over a paged KV cache, built to show preemption.

The public names load lazily, so ``import pykv.border.config`` (or a lesson file's validation) does not
pull in the engine, torch or the model loader.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EngineConfig": "pykv.border.config",
    "LLMEngine": "pykv.engine.llm_engine",
    "RequestOutput": "pykv.border.request",
    "RequestStatus": "pykv.border.request",
    "SamplingParams": "pykv.border.request",
    "Snapshot": "pykv.border.snapshot",
    "StepReport": "pykv.border.step_report",
    "default_model_path": "pykv.engine.model.loader",
    "load_model": "pykv.engine.model.loader",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pykv' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
