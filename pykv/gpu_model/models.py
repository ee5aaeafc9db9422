"""The model catalogue: names -> the ``config.json`` shipped beside this file (facts, no weights).
Sources: each model's Hugging Face page (``configs/README.md`` lists them)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pykv.gpu_model.shapes import ModelShape

CONFIGS = Path(__file__).parent / "configs"
MODELS: dict[str, str] = {  # catalogue name -> display name
    "llama-3.1-8b": "Llama-3.1-8B",
    "qwen2.5-7b": "Qwen2.5-7B",
    "qwen2.5-14b": "Qwen2.5-14B",
    "llama-2-7b": "Llama-2-7B",
    "llama-2-13b": "Llama-2-13B",
    "llama-2-70b": "Llama-2-70B",
    "llama-3.1-70b": "Llama-3.1-70B",
    "qwen2.5-0.5b": "Qwen2.5-0.5B",
    "opt-13b": "OPT-13B",
}


def _known() -> str:
    return ", ".join(MODELS)


@lru_cache(maxsize=None)
def _load(name: str) -> ModelShape:
    return ModelShape.from_file(CONFIGS / f"{name}.json", MODELS[name])


def find_model(name) -> ModelShape:
    """The catalogue shape named ``name`` (case-insensitive), or a ModelShape given as is; ValueError
    listing the known names."""
    if isinstance(name, ModelShape):
        return name
    if not isinstance(name, str) or name.strip().lower() not in MODELS:
        raise ValueError(
            f"Unknown model {name!r}; choose one of: {_known()} (or pass a ModelShape built from a "
            "config.json with ModelShape.from_config)."
        )
    return _load(name.strip().lower())
