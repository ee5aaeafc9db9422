"""About: what the lab is, what is proved against vLLM by running it, where it runs, and the model card."""

from __future__ import annotations

import streamlit as st
import torch

from pykv.border.oracle_coverage import oracle_markdown
from pykv.border.preemption_choices import KV_FATES, VICTIM_POLICIES
from pykv.engine.model.attention import resolve_backend
from pykv.engine.model.loader import resolve_model_path
from pykv.ui.session import state

INTRO = """
**pykv lab** is a browser lab for LLM-serving preemption. It drives a *live* small-model inference
engine (pykv: a vLLM-style scheduler over a paged KV cache) step by step. Shrink the KV block pool,
submit requests and watch block tables, reference counts, prefix-cache hits and the
WAITING / RUNNING / SWAPPED queues change each step, while the engine **measures** what every
preemption cost: recompute (the re-prefill it forced) or swap (the bytes and time of the copies).

Measured figures are labelled with the device they were measured on; PCIe swap times are
**modelled** (bandwidth + per-copy overhead) and always say so.
"""


def choices_markdown() -> str:
    """The victim policies and the fates of a victim's KV, two lines each with the profile that has them."""
    policies = "\n".join(f"- `{name}`: {p.about}" for name, p in VICTIM_POLICIES.items())
    fates = "\n".join(f"- `{name}`: {text}" for name, text in KV_FATES.items())
    return (
        f"**Who is preempted** (`preemption_victim`)\n\n{policies}\n\n**Where the victim's KV goes** "
        f"(`preemption_mode`, the offloading tier)\n\n{fates}"
    )


def render() -> None:
    st.title("About pykv lab")
    st.markdown(INTRO)
    lab = st.session_state.get("lab")
    cfg = lab.config if lab is not None else state.default_config()
    if lab is not None:
        backend = lab.engine.backend.label
    else:
        try:
            backend = resolve_backend(cfg.attention_backend, cfg.device, stepwise=True).label
        except ValueError as e:
            backend = f"unavailable ({e})"
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none on this machine"
    st.subheader("When the KV pool is full")
    st.markdown(choices_markdown())
    st.subheader("Proved against vLLM, by running it")
    st.markdown(oracle_markdown())
    st.subheader("Where it runs")
    st.markdown(
        f"- device: `{cfg.device}` (CUDA GPU: {gpu})\n"
        f"- attention backend in use: `{backend}` (chosen: `{cfg.attention_backend}`)\n"
        f"- torch {torch.__version__}\n"
        f"- model: `{cfg.model}`"
        + (f" (from ${state.MODEL_ENV})" if state.model_name() != "tiny" else " (the shipped default)")
    )
    st.subheader("Model card")
    try:
        card = resolve_model_path(cfg.model) / "README.md"
    except ValueError as e:
        st.warning(str(e))
        return
    if card.is_file():
        st.markdown(strip_front_matter(card.read_text(encoding="utf-8")))
    else:
        st.caption(f"No model card ({card} does not exist).")


def strip_front_matter(text: str) -> str:
    """Hugging Face model cards open with YAML metadata between '---' lines; show only the prose."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4 :].lstrip("\n")
    return text
