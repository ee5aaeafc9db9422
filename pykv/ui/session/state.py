"""Session plumbing: the shared model weights, this session's Lab, the URL (query params), and the
limits a shared server needs (a link is untrusted input).

Weights are loaded once per process (``st.cache_resource``) and shared read-only by every session;
each session owns its Lab (engine + KV pool) in ``st.session_state``, dropped when the session ends.

Limits, all checked before anything is allocated or run:

- a URL value is held to the sidebar's own bounds (``Knob.maximum``); a bad one is reported as plain
  text (never Markdown: links are untrusted) and replaced by its default;
- every action that runs the engine (deep-link replay, Run to end, Next preemption) has a time
  budget, and a session has a compute allowance over a sliding window; an action stops when its
  session is gone (the browser tab closed);
- at most ``MAX_ENGINE_SESSIONS`` sessions hold an engine at once, and their engines' memory (KV pools
  + a full history, ``lab.memory_estimate``) stays under ``APP_ENGINE_BYTES`` (half the machine's memory), one
  session's under ``SESSION_ENGINE_BYTES``.
"""

from __future__ import annotations

import os
import re

import streamlit as st
import torch

from pykv.border.config import EngineConfig, Knob, knobs
from pykv.border.knob_table import knob_text, parse_knob_text
from pykv.border.runtime import configure_torch_threads
from pykv.border.workload import PRESETS, Workload
from pykv.engine.model.attention import prepare_stepwise_attention
from pykv.engine.model.loader import LoadedModel, load_model
from pykv.lab.lab import Lab, lab_config
from pykv.ui.safe_text import code, plain
from pykv.ui.session import replay_link
from pykv.ui.session.budgets import DEEP_LINK_BUDGET_S, run_action
from pykv.ui.session.seats import ServerFull, claim_seat

MODEL_ENV = "PYKV_MODEL"  # a checkpoint folder to run instead of the shipped "tiny" (tests use a random one)
DEFAULT_PRESET = "storm"
KEPT_PARAMS = ("exercise",)  # left in the address bar by sync_url (the Playground's "Your turn" panel reads it)

STEP_PATTERN = re.compile(r"[0-9]{1,9}")  # ASCII digits only: str.isdigit() accepts "²", int() then fails


class ModelError(ValueError):
    """The model itself could not be loaded (not a config problem): the PYKV_MODEL hint applies."""


# ---- the model and the engine seats --------------------------------------------------------------------


def model_name() -> str:
    return os.environ.get(MODEL_ENV) or "tiny"


def default_config() -> EngineConfig:
    return lab_config(model=model_name())


@st.cache_resource(show_spinner="Loading model weights (once, shared by every session)…", max_entries=4)
def shared_model(model: str, device: str, dtype: str) -> LoadedModel:
    configure_torch_threads()  # once per process, before any engine runs
    prepare_stepwise_attention()  # Triton's interpreter on, before the model load imports triton (CPU only)
    return load_model(model, device, dtype)


def model_for(config: EngineConfig) -> LoadedModel:
    """The shared weights for ``config``; ModelError when the model itself cannot be loaded."""
    try:
        return shared_model(config.model, config.device, config.dtype)
    except (ValueError, OSError) as e:
        raise ModelError(str(e)) from None


def make_lab(config: EngineConfig, preset: str | None, seed: int = 0, workload: Workload | None = None) -> Lab:
    """A new Lab on the shared weights (``workload``, if given, instead of the preset's). ModelError (model),
    ServerFull (app cap) or the engine's ValueError (config) pass through; the seat is claimed before any pool
    is allocated."""
    loaded = model_for(config)
    seat = claim_seat(config, loaded)
    lab = Lab(config, loaded, preset, seed, workload=workload)
    seat.labs.add(lab)
    lab.check_workload()  # a preset request the engine will refuse: say so now, not at its arrival step
    return lab


# ---- the URL -----------------------------------------------------------------------------------------------


def _url_value(spec: Knob, text: str):
    """A URL parameter's value, held to the same limits as the sidebar's widget."""
    value = parse_knob_text(spec, text)
    if isinstance(value, int) and not isinstance(value, bool) and spec.maximum is not None and value > spec.maximum:
        raise ValueError(f"{spec.name} is at most {spec.maximum} in the app")
    if spec.name == "device" and value != "cpu":
        found = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(value.split(":")[1]) if re.fullmatch(r"cuda:\d{1,3}", value) else 0
        if not re.fullmatch(r"cuda(:\d{1,3})?", value) or index >= found:
            raise ValueError("no such device on this server")
    return value


def config_from_query(params: dict[str, str], base: EngineConfig) -> tuple[EngineConfig, list[str]]:
    """``base`` with the URL's knobs applied (only knobs exposed to URLs), and a plain-text message per
    value that was not used: each bad value (unparsable, beyond the sidebar's limits, a device this
    server lacks) keeps its default, and a combination the config refuses falls back to ``base``."""
    changes, problems = {}, []
    for spec in knobs("url"):
        if spec.name in params:
            try:
                changes[spec.name] = _url_value(spec, params[spec.name])
            except ValueError as e:
                problems.append(
                    f"The link's {spec.name}={code(params[spec.name])} is not valid ({plain(e)}); "
                    f"the default {code(knob_text(getattr(base, spec.name)))} is used."
                )
    try:
        return base.replace(**changes), problems
    except ValueError as e:
        return base, problems + [f"The link's settings were not used: {plain(e)} The defaults are used."]


def parse_step(raw: str | None) -> int | None:
    """A step number from a URL: ASCII digits only and at most 9 of them; None otherwise."""
    return int(raw) if raw is not None and STEP_PATTERN.fullmatch(raw) else None


def query_for(lab: Lab) -> dict[str, str]:
    return query_of(lab.config, lab.preset, lab.cursor)


def query_of(config: EngineConfig, preset: str | None, step: int) -> dict[str, str]:
    """The link's parameters for ``config`` on ``preset`` at ``step``: the knobs that differ from the defaults."""
    base = default_config()
    query = {"preset": preset or "none", "step": str(step)}
    for spec in knobs("url"):
        value = getattr(config, spec.name)
        if value != getattr(base, spec.name):
            query[spec.name] = knob_text(value)
    return query


def sync_url(lab: Lab) -> None:
    """Make the address bar reproduce the view: ?preset=...&step=N (+ changed config fields)."""
    kept = {k: st.query_params[k] for k in KEPT_PARAMS if k in st.query_params}
    wanted = query_for(lab) | replay_link.query_part(lab) | kept
    current = {k: st.query_params.get(k) for k in list(st.query_params.keys())}
    if current != wanted:
        st.query_params.from_dict(wanted)


def lab_from_url(workload: Workload | None = None, seed: int = 0) -> Lab:
    """The Lab a link asks for (``workload`` and its ``seed`` instead of the link's preset: an exercise on a
    lesson's own workload). Every bad value is a warning and its default; ModelError (the model cannot be
    loaded) or ServerFull pass through for the caller to show."""
    params = {k: st.query_params[k] for k in st.query_params.keys()}
    if workload is None:  # a server replay's link carries its workload
        workload = replay_link.workload_from_link(params)
        seed = workload.seed if workload is not None else seed
    preset: str | None = params.get("preset", DEFAULT_PRESET)  # None (below) for preset=none
    if preset not in PRESETS and preset != "none":
        st.warning(
            f"Unknown preset {code(preset)} in the link; using `{DEFAULT_PRESET}`. Presets: {', '.join(PRESETS)}."
        )
        preset = DEFAULT_PRESET
    config, problems = config_from_query(params, default_config())
    for message in problems:
        st.warning(message)
    preset = None if preset == "none" else preset
    try:
        lab = make_lab(config, preset, seed, workload)
    except (ModelError, ServerFull):
        raise
    except ValueError as e:  # the engine refused the combination: its message, then the defaults
        st.warning(f"The link's settings were not used: {plain(e)} The defaults are used.")
        lab = make_lab(default_config(), preset, seed, workload)
    raw = params.get("step", "0")
    step = parse_step(raw)
    if step is None:
        st.warning(f"step={code(raw)} in the link is not a step number; starting at step 0.")
    elif step:
        try:
            with st.spinner(f"Replaying to step {step}…"):
                note = run_action(lab, "Replaying the link", lab.goto, DEEP_LINK_BUDGET_S, step)
        except Exception as e:  # an engine failure mid-replay: the steps recorded so far stay viewable
            lab.cursor = lab.head
            note = f"Replaying the link stopped at step {lab.cursor}: the engine failed ({plain(e)})."
        if note:
            st.warning(f"{note} The link asked for step {step}.")
        elif lab.cursor < step:
            st.info(f"The run ends at step {lab.cursor}; showing that instead of step {step}.")
    return lab


def get_lab(workload: Workload | None = None, seed: int = 0) -> Lab | None:
    """This session's Lab, built from the URL on first use (``workload``: see lab_from_url); None (after an
    st.error) if it cannot be."""
    if "lab" not in st.session_state:
        try:
            st.session_state.lab = lab_from_url(workload, seed)
        except ServerFull as e:
            st.error(plain(e))
            return None
        except ModelError as e:
            st.error(f"Could not load the model: {plain(e)}")
            if model_name() == "tiny":
                st.info(
                    f"Set the environment variable {MODEL_ENV} to a local Hugging Face Llama/Qwen2 checkpoint "
                    "folder, or train the shipped model: `python -m pykv.assets.train_tiny`."
                )
            return None
        except ValueError as e:  # the defaults themselves refused (should not happen): no model hint
            st.error(f"Could not start the engine: {plain(e)}")
            return None
    return st.session_state.lab


def is_dark() -> bool:
    try:
        return getattr(st.context.theme, "type", None) == "dark"
    except Exception:  # outside a browser session (bare mode)
        return False
