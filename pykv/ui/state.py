"""Session plumbing: the shared model weights, this session's Lab, and the URL (query params).

Weights are loaded once per process (``st.cache_resource``) and shared read-only by every session;
each session owns its Lab (engine + KV pool) in ``st.session_state``, dropped when the session ends.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

import streamlit as st

from pykv import EngineConfig
from pykv.loader import LoadedModel, load_model
from pykv.ui.lab import Lab, configure_torch_threads
from pykv.workload import PRESETS

MODEL_ENV = "PYKV_MODEL"  # a checkpoint folder to run instead of the shipped "tiny" (tests use a random one)
DEFAULT_PRESET = "storm"
# Sidebar fields that a link carries (written to the URL only when they differ from the defaults).
URL_FIELDS = ("num_gpu_blocks", "block_size", "num_cpu_blocks", "max_num_seqs", "max_num_batched_tokens",
              "preemption_mode", "enable_prefix_caching", "enable_chunked_prefill", "device", "attention_backend")


def model_name() -> str:
    return os.environ.get(MODEL_ENV) or "tiny"


def default_config() -> EngineConfig:
    return EngineConfig(model=model_name(), num_gpu_blocks=64)


@st.cache_resource(show_spinner="Loading model weights (once, shared by every session)…", max_entries=4)
def shared_model(model: str, device: str, dtype: str) -> LoadedModel:
    configure_torch_threads()  # once per process, before any engine runs
    return load_model(model, device, dtype)


def make_lab(config: EngineConfig, preset: Optional[str], seed: int = 0) -> Lab:
    """A new Lab on the shared weights; ValueError (bad config, missing model) passes through."""
    return Lab(config, shared_model(config.model, config.device, config.dtype), preset, seed)


def _parse(field: dataclasses.Field, text: str):
    default = field.default
    if isinstance(default, bool):
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"{field.name} must be true or false, got {text!r}")
        return text.lower() in ("true", "1")
    if field.name == "num_cpu_blocks":
        return None if text.lower() in ("none", "0") else int(text)
    if isinstance(default, int):
        return int(text)
    return text


def config_from_query(params: dict[str, str], base: EngineConfig) -> EngineConfig:
    """``base`` with the URL's fields applied; ValueError names the bad one."""
    fields = {f.name: f for f in dataclasses.fields(EngineConfig)}
    changes = {}
    for name in URL_FIELDS:
        if name in params:
            try:
                changes[name] = _parse(fields[name], params[name])
            except ValueError:
                raise ValueError(f"The link's {name}={params[name]!r} is not valid; the default is used.") from None
    return base.replace(**changes)


def query_for(lab: Lab) -> dict[str, str]:
    base = default_config()
    query = {"preset": lab.preset or "none", "step": str(lab.cursor)}
    for name in URL_FIELDS:
        value = getattr(lab.config, name)
        if value != getattr(base, name):
            query[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return query


def sync_url(lab: Lab) -> None:
    """Make the address bar reproduce the view: ?preset=...&step=N (+ changed config fields)."""
    wanted = query_for(lab)
    current = {k: st.query_params.get(k) for k in list(st.query_params.keys())}
    if current != wanted:
        st.query_params.from_dict(wanted)


def lab_from_url() -> Lab:
    """The Lab a link asks for; ValueError for an unusable link or model (the caller shows it)."""
    params = {k: st.query_params.get(k) for k in st.query_params.keys()}
    preset = params.get("preset", DEFAULT_PRESET)
    if preset not in PRESETS and preset != "none":
        st.warning(f"Unknown preset {preset!r} in the link; using {DEFAULT_PRESET!r}. Presets: {', '.join(PRESETS)}.")
        preset = DEFAULT_PRESET
    try:
        config = config_from_query(params, default_config())
    except ValueError as e:
        st.warning(str(e))
        config = default_config()
    lab = make_lab(config, None if preset == "none" else preset)
    step = params.get("step", "0")
    if not step.isdigit():
        st.warning(f"step={step!r} in the link is not a number; starting at step 0.")
    elif int(step):
        with st.spinner(f"Replaying to step {step}…"):
            shown = lab.goto(int(step))
        if shown < int(step):
            st.info(f"The run ends at step {shown}; showing that instead of step {step}.")
    return lab


def get_lab() -> Optional[Lab]:
    """This session's Lab, built from the URL on first use; None (after an st.error) if it cannot be."""
    if "lab" not in st.session_state:
        try:
            st.session_state.lab = lab_from_url()
        except ValueError as e:
            st.error(f"Could not start the engine: {e}")
            if model_name() == "tiny":
                st.info(f"Set the environment variable {MODEL_ENV} to a local Hugging Face Llama/Qwen2 checkpoint "
                        "folder, or train the shipped model: `python -m pykv.assets.train_tiny`.")
            return None
    return st.session_state.lab


def is_dark() -> bool:
    try:
        return getattr(st.context.theme, "type", None) == "dark"
    except Exception:  # outside a browser session (bare mode)
        return False
