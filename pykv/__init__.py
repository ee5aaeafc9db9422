"""pykv: a small vLLM-style inference engine over a paged KV cache, built to show preemption.

The public names load lazily, so ``import pykv.config`` (or a lesson file's validation) does not
pull in the engine, torch or the model loader.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EngineConfig": "pykv.config",
    "LLMEngine": "pykv.engine",
    "RequestOutput": "pykv.request",
    "RequestStatus": "pykv.request",
    "SamplingParams": "pykv.request",
    "Snapshot": "pykv.snapshot",
    "StepReport": "pykv.step_report",
    "default_model_path": "pykv.loader",
    "load_model": "pykv.loader",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pykv' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
