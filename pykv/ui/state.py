"""Session plumbing: the shared model weights, this session's Lab, and the URL (query params).

Weights are loaded once per process (``st.cache_resource``) and shared read-only by every session;
each session owns its Lab (engine + KV pool) in ``st.session_state``, dropped when the session ends.
"""

from __future__ import annotations

import os
from typing import Optional

import streamlit as st

from pykv.config import EngineConfig, Knob, knob_text, knobs, parse_knob_text
from pykv.lab import Lab, lab_config
from pykv.loader import LoadedModel, load_model
from pykv.runtime import configure_torch_threads
from pykv.workload import PRESETS

MODEL_ENV = "PYKV_MODEL"  # a checkpoint folder to run instead of the shipped "tiny" (tests use a random one)
DEFAULT_PRESET = "storm"


def model_name() -> str:
    return os.environ.get(MODEL_ENV) or "tiny"


def default_config() -> EngineConfig:
    return lab_config(model=model_name())


@st.cache_resource(show_spinner="Loading model weights (once, shared by every session)…", max_entries=4)
def shared_model(model: str, device: str, dtype: str) -> LoadedModel:
    configure_torch_threads()  # once per process, before any engine runs
    return load_model(model, device, dtype)


def make_lab(config: EngineConfig, preset: Optional[str], seed: int = 0) -> Lab:
    """A new Lab on the shared weights; ValueError (bad config, missing model) passes through."""
    return Lab(config, shared_model(config.model, config.device, config.dtype), preset, seed)


def _url_value(spec: Knob, text: str):
    """A URL parameter's value, held to the same limits as the sidebar's widget."""
    value = parse_knob_text(spec, text)
    if isinstance(value, int) and not isinstance(value, bool) and spec.maximum is not None and value > spec.maximum:
        raise ValueError(f"{spec.name} is at most {spec.maximum} in the app")
    return value


def config_from_query(params: dict[str, str], base: EngineConfig) -> EngineConfig:
    """``base`` with the URL's knobs applied (only knobs exposed to URLs); ValueError names the bad one."""
    changes = {}
    for spec in knobs("url"):
        if spec.name in params:
            try:
                changes[spec.name] = _url_value(spec, params[spec.name])
            except ValueError:
                raise ValueError(f"The link's {spec.name}={params[spec.name]!r} is not valid; "
                                 "the default is used.") from None
    return base.replace(**changes)


def query_for(lab: Lab) -> dict[str, str]:
    base = default_config()
    query = {"preset": lab.preset or "none", "step": str(lab.cursor)}
    for spec in knobs("url"):
        value = getattr(lab.config, spec.name)
        if value != getattr(base, spec.name):
            query[spec.name] = knob_text(value)
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
