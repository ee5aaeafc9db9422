"""The sidebar: the engine's knobs under vLLM's flag names, derived from ``EngineConfig``'s table (every
knob exposed to the sidebar, with its type's widget, its bounds and its help), and the workload. Apply
rebuilds the engine; an invalid choice shows the engine's own message and leaves the running engine as it was."""

from __future__ import annotations

from typing import Any

import streamlit as st
import torch

from pykv.border.config import Knob, knob_named, knobs
from pykv.border.units import fmt_bytes
from pykv.border.vllm_profiles import profile, victim_caveat
from pykv.border.workload import PRESETS
from pykv.lab.lab import Lab
from pykv.ui import safe_text
from pykv.ui.session import state
from pykv.ui.session.flash import flash, show
from pykv.ui.views.widgets import target

PRESET_LABELS = {
    "burst": "burst — 8 short requests at once",
    "shared_prefix": "shared system prompt (prefix caching)",
    "long_context": "long context — long prompts beside short",
    "storm": "storm — over-subscribed pool",
    "spread": "spread — one arrival every 4 steps",
    "none": "none — only requests added by hand",
}


def _options(spec: Knob, current: Any, profile_name: str) -> list:
    """The choices of a knob: its Literal's (the preemption modes the chosen profile's release has), or a list
    only known at run time (``options`` in the table)."""
    if spec.options == "devices":
        found = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        return found + ([current] if current not in found else [])
    if spec.name == "preemption_mode":
        return list(profile(profile_name).preemption_modes)
    return list(spec.choices)


def shown_knobs(profile_name: str) -> list[Knob]:
    """The sidebar's knobs, but the profile's own, that the chosen vLLM profile has (swap's only where it swaps)."""
    return [
        k for k in knobs("sidebar") if k.name != "vllm_profile" and (k.profiles is None or profile_name in k.profiles)
    ]


def with_swap_pool(changes: dict, cfg) -> tuple[dict, str | None]:
    """Swap chosen with no CPU pool anywhere: one as big as the device pool (vLLM's --swap-space defaults to
    4 GiB; the lab's default engine has none), so that choosing swap is one Apply; and a note saying so."""
    swaps = changes.get("preemption_mode", cfg.preemption_mode) in ("swap", "auto")
    if not swaps or changes.get("num_cpu_blocks") is not None or changes.get("swap_space", cfg.swap_space):
        return changes, None
    blocks = changes.get("num_gpu_blocks", cfg.num_gpu_blocks)
    return changes | {"num_cpu_blocks": blocks}, (
        f"Swap needs a CPU pool to swap into: num_cpu_blocks is set to "
        f"{blocks}, as many as the device pool (change it there)."
    )


def widget(spec: Knob, value: Any, lab: Lab, profile_name: str) -> Any:
    """The widget the knob's type asks for (key ``cfg_<name>``); returns what it shows."""
    key, label, help_text = f"cfg_{spec.name}", spec.name, spec.help[:1].upper() + spec.help[1:] + "."
    if spec.name in ("num_cpu_blocks", "num_offload_blocks"):
        help_text += f" One block here is {fmt_bytes(lab.engine.bytes_per_block)}."
    if spec.kind == "bool":
        return st.toggle(label, value, key=key, help=help_text)
    if spec.kind == "choice" or spec.options:
        options = _options(spec, value, profile_name)
        value = value if value in options else options[0]  # e.g. swap, with a V1 release chosen
        if spec.kind == "choice" and (len(options) <= 3 or spec.widget == "segmented"):
            return st.segmented_control(label, options, default=value, key=key, required=True, help=help_text)
        return st.selectbox(label, options, index=options.index(value), key=key, help=help_text)
    if spec.kind == "int":
        low, high = int(spec.ge or 0), spec.maximum
        if value is not None:  # never beyond the widget's own bounds (Streamlit would raise)
            value = max(low, value if high is None else min(int(high), value))
        if spec.widget == "slider" and high is not None:
            return st.slider(label, low, int(high), value, key=key, help=help_text)
        return st.number_input(
            label,
            low,
            None if high is None else int(high),
            value,
            step=1,
            key=key,
            help=help_text + (" Leave empty for none." if spec.optional else ""),
        )
    return st.number_input(label, value=value, key=key, help=help_text)


def render(lab: Lab) -> None:
    cfg = lab.config
    with st.sidebar:
        st.markdown("### Engine")
        # Outside the form: choosing a release reruns the sidebar at once, so the form below shows that
        # release's knobs and preemption modes (swap, its CPU pool) and one Apply sets them all.
        chosen = widget(knob_named("vllm_profile"), cfg.vllm_profile, lab, cfg.vllm_profile) or cfg.vllm_profile
        if chosen != cfg.vllm_profile:
            st.caption(f"{chosen}'s knobs are below; Apply switches the engine to it.")
        with st.form("config", border=False):
            shown = {spec.name: widget(spec, getattr(cfg, spec.name), lab, chosen) for spec in shown_knobs(chosen)}
            shown["vllm_profile"] = chosen
            st.markdown("### Workload")
            options = list(PRESETS) + ["none"]
            preset = st.selectbox(
                "preset",
                options,
                index=options.index(lab.preset or "none"),
                key="cfg_preset",
                format_func=lambda p: PRESET_LABELS.get(p, p),
                help="Seeded request mixes; add more requests by hand any time.",
            )
            applied = st.form_submit_button("Apply (rebuilds the engine)", type="primary", width="stretch")
        if applied:
            # A widget cleared to None keeps the current value unless the knob itself may be None.
            changes = {name: value for name, value in shown.items() if value is not None or knob_named(name).optional}
            changes, pool_note = with_swap_pool(changes, cfg)
            apply(lab, changes, preset, pool_note)
        show("sidebar")
        st.caption(f"Model: `{cfg.model}` · {lab.engine.backend.label} attention on {cfg.device}")
        caveat = victim_caveat(cfg.vllm_profile, cfg.preemption_victim)
        if caveat:
            st.warning(caveat, icon=":material/warning:")
        st.markdown("### Modelled target")
        target.picker("sb_", horizontal=False)
        most_blocks = knob_named("num_gpu_blocks").maximum
        assert most_blocks is not None  # num_gpu_blocks has an app_max (an int)
        target.pool_in_gib(lab, apply, int(most_blocks))


def apply(lab: Lab, changes: dict, preset: str, note: str | None = None) -> None:
    """Rebuild the session's engine; on ValueError show it and keep the current one. A new vLLM profile puts
    the knobs it lacks back to their defaults, and says which (after ``note``, when given)."""
    profile = changes.pop("vllm_profile", lab.config.vllm_profile)
    try:
        config, reset = lab.config.with_profile(profile, **changes)
        kept = lab.workload if preset == "none" and lab.preset is None else None  # e.g. a lesson's, explored
        new_lab = state.make_lab(config, None if preset == "none" else preset, seed=lab.seed, workload=kept)
    except ValueError as e:
        st.error(f"Not applied: {safe_text.plain(e)}")
        return
    notes = [note] if note else []
    if reset:
        notes.append(
            f"vllm_profile={profile} has no {', '.join(reset)}: "
            f"{'it is' if len(reset) == 1 else 'they are'} back at the default."
        )
    if notes:
        flash(" ".join(notes), "info", "sidebar")
    st.session_state.lab = new_lab
    st.session_state.playing = False
    for key in [k for k in st.session_state if str(k).startswith("cfg_")]:
        del st.session_state[key]  # the widgets start again from the new engine's values (a filled-in CPU pool)
    st.rerun()
