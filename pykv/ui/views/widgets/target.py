"""The modelled target: which GPU + model the live schedule is priced on (one choice per session, shared
by the pages), its picker, the KV pool in GiB of that model's KV, and the expander with the formulas.

The tiny model still produces every token; the target only turns the real schedule into GPU time.
"""

from __future__ import annotations

import statistics
from functools import lru_cache
from typing import Any, Callable

import streamlit as st

from pykv.gpu_model import DEFAULT_TARGET, GPUS, MODELS, Estimate, Target
from pykv.gpu_model.estimate import DTYPES
from pykv.gpu_model.explain import FORMULAS, calibration_markdown, target_facts
from pykv.gpu_model.pool import blocks_for_gib, gib_for_blocks
from pykv.gpu_model.published import POINTS, predict
from pykv.lab.lab import Lab
from pykv.ui import safe_text
from pykv.ui.session.flash import flash, show
from pykv.viz.modelled import MODELLED_ONE_LINE

TP_CHOICES = (1, 2, 4, 8)
ONE_LINE = MODELLED_ONE_LINE  # said the same in a review pack


@lru_cache(maxsize=32)
def estimate_of(target: Target) -> Estimate:
    return target.estimate()


def current() -> Target:
    return st.session_state.get("target", DEFAULT_TARGET)


def current_estimate(target: Target | None = None) -> Estimate:
    return estimate_of(target or current())


def _choose(key_prefix: str) -> None:
    """on_change: the picker's four widgets -> the session's target (an impossible one is refused, said why)."""
    read = {name: st.session_state[f"{key_prefix}target_{name}"] for name in ("gpu", "model", "dtype", "tp")}
    try:
        wanted = Target(**read)
        estimate_of(wanted)
    except ValueError as e:
        flash(str(e), place="target")
        return
    st.session_state.target = wanted


def picker(key_prefix: str = "", horizontal: bool = True) -> Estimate:
    """GPU, model, dtype and tensor-parallel size of the modelled target; returns its Estimate."""
    t = current()
    pickers: tuple[tuple[str, list[Any], Any, Callable[[Any], str] | None], ...] = (  # name, options, value, format
        ("gpu", list(GPUS), t.gpu, None),
        ("model", list(MODELS), t.model, lambda m: MODELS[m]),
        ("dtype", list(DTYPES), t.dtype, None),
        ("tp", list(TP_CHOICES), t.tp, lambda n: f"TP{n}"),
    )
    with st.container(horizontal=horizontal, key=f"{key_prefix}target_picker"):
        for name, options, value, fmt in pickers:
            st.selectbox(
                f"modelled {name}",
                options,
                index=options.index(value),
                key=f"{key_prefix}target_{name}",
                format_func=fmt or str,
                on_change=_choose,
                args=(key_prefix,),
                help="The GPU, model shape, dtype and tensor parallelism the schedule is priced on "
                "(modelled, never measured).",
            )
    show("target", prefix="Not changed: ")
    est = current_estimate()
    st.caption(ONE_LINE.format(label=f"**modelled {est.label}**"))
    return est


@st.fragment
def pool_in_gib(lab: Lab, apply: Callable[[Lab, dict, str], None], max_blocks: int) -> None:
    """Size the device pool in GiB of the target model's KV: blocks = GiB / bytes per block of the target. The box
    starts from the engine's pool on this target whenever either changes (it kept an old value after Apply, which Set
    pool then applied unseen), and says what Set pool would do while it differs."""
    est, size = current_estimate(), lab.config.block_size
    low, high = gib_for_blocks(est, 1, size), gib_for_blocks(est, max_blocks, size)
    now = min(high, gib_for_blocks(est, lab.config.num_gpu_blocks, size))
    if st.session_state.get("target_pool_for") != (lab.config, est.label):
        st.session_state.target_pool_for = (lab.config, est.label)
        st.session_state.target_pool_gib = now
    gib = st.number_input(
        f"KV pool, GiB of {est.shape.name} KV on {est.gpu.name}",
        min_value=None,
        step=low,
        format="%.4f",
        key="target_pool_gib",
        help=f"One {size}-token block of {est.shape.name} KV is {low * 2**10:g} MiB "
        f"({est.kv_dtype}, TP{est.tp}); the app takes 1 to {max_blocks} blocks "
        f"({low:.4g} to {high:.4g} GiB).",
    )
    try:
        # the box's own value gives the engine's pool back exactly (GiB -> blocks floors, and 64 blocks' GiB times
        # 2**30 may land a hair under 64 blocks' bytes)
        blocks = lab.config.num_gpu_blocks if gib == now else blocks_for_gib(est, gib, size)
        if blocks > max_blocks:
            raise ValueError(
                f"{gib:g} GiB is {blocks} blocks of {est.shape.name} KV; the app takes at most "
                f"{max_blocks} ({high:.4g} GiB). The CLI and the API take any size."
            )
    except ValueError as e:
        blocks = None
        st.error(safe_text.plain(e))
    if blocks is not None and blocks != lab.config.num_gpu_blocks:
        st.warning(
            f"**Unapplied**: {gib:.4g} GiB is {blocks} blocks; the engine still has {lab.config.num_gpu_blocks}.",
            icon=":material/edit_note:",
        )
    if st.button("Set pool (rebuilds the engine)", key="target_pool_set", width="stretch", disabled=blocks is None):
        apply(lab, {"num_gpu_blocks": blocks}, lab.preset or "none")
    st.caption(
        f"{lab.config.num_gpu_blocks} blocks × {size} tokens = "
        f"{gib_for_blocks(est, lab.config.num_gpu_blocks, size):.4g} GiB of {est.shape.name} KV (modelled)."
    )


@lru_cache(maxsize=1)
def validation_summary() -> str:
    points = [p for p in POINTS if not p.input]
    errors = [abs(predict(p) / p.published - 1) for p in points]
    worst = max(max(predict(p) / p.published, p.published / predict(p)) for p in points)
    return (
        f"Checked against {len(points)} published measurements (TensorRT-LLM, LMDeploy, NVIDIA NIM, the vLLM "
        f"paper): median error {statistics.median(errors) * 100:.0f}%, worst {worst:.2f}x "
        "(`python -m bench.gpu_model_validation`)."
    )


def formulas_expander(est: Estimate, key: str = "target_formulas") -> None:
    """The model's formulas and calibration, drawn when the expander opens (a rerun), not on every Step."""
    with st.expander(
        f"How the modelled figures are computed (modelled {est.label})",
        icon=":material/functions:",
        key=key,
        on_change="rerun",
    ) as expander:
        if not expander.open:
            return
        st.markdown(FORMULAS)
        st.markdown(
            "\n".join(["| target | |", "|---|---|"] + [f"| {what} | {value} |" for what, value in target_facts(est)])
        )
        st.markdown(
            "**Calibration** (one table for every target; none is tuned per view):\n\n" + calibration_markdown()
        )
        st.caption(validation_summary())
