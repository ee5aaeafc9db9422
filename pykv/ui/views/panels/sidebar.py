"""The sidebar: the engine's knobs under vLLM's flag names, derived from ``EngineConfig``'s table (every
knob exposed to the sidebar, with its type's widget, its bounds and its help), and the workload. Apply
rebuilds the engine; an invalid choice shows the engine's own message and leaves the running engine as it was.

The knobs sit in a fragment, not a form: a change reruns the sidebar alone, which then lists what Apply would
change ("Unapplied changes: num_gpu_blocks 64 → 81"), where a form kept its edits invisible until submitted."""

from __future__ import annotations

from typing import Any

import streamlit as st
import torch

from pykv.border.config import Knob, knob_named, knobs
from pykv.border.knob_table import knob_text
from pykv.border.units import fmt_bytes
from pykv.border.vllm_profiles import profile, victim_caveat
from pykv.border.workload import PRESETS
from pykv.lab.lab import Lab
from pykv.ui import safe_text
from pykv.ui.session import state
from pykv.ui.session.flash import flash, show
from pykv.ui.views.panels import pool_finder
from pykv.ui.views.widgets import target

PRESET_LABELS = {
    "burst": "burst — 8 short requests at once",
    "shared_prefix": "shared system prompt (prefix caching)",
    "long_context": "long context — long prompts beside short",
    "storm": "storm — over-subscribed pool (12 × 128 tokens)",
    "small_storm": "small storm — the Sweep's (8 × 48 tokens)",
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


def _int_widget(spec: Knob, value: int | None, key: str, label: str, help_text: str) -> int | None:
    """A number box, so that an exact value is typed (lesson 2's answer is one block out of 512); a knob drawn as a
    slider keeps its slider under the box, the two kept equal."""
    low, high = int(spec.ge or 0), spec.maximum
    if value is not None:  # never beyond the widget's own bounds (Streamlit would raise)
        value = max(low, value if high is None else min(int(high), value))
    top = None if high is None else int(high)
    if spec.widget != "slider" or top is None:
        return st.number_input(
            label,
            low,
            top,
            value,
            step=1,
            key=key,
            help=help_text + (" Leave empty for none." if spec.optional else ""),
        )
    slider_key = f"{key}_slider"
    st.session_state.setdefault(key, value)  # both widgets start from the engine's value, then follow each other
    st.session_state.setdefault(slider_key, st.session_state[key])
    typed = st.number_input(
        label,
        low,
        top,
        step=1,
        key=key,
        help=help_text + " Type a value, or drag the slider below.",
        on_change=_follow,
        args=(key, slider_key),
    )
    st.slider(
        label,
        low,
        top,
        key=slider_key,
        label_visibility="collapsed",
        on_change=_follow,
        args=(slider_key, key),
    )
    return typed


def _follow(source: str, target_key: str) -> None:
    """on_change: the twin widget shows the value just chosen (an emptied box leaves the slider where it was)."""
    if st.session_state.get(source) is not None:
        st.session_state[target_key] = st.session_state[source]


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
        return _int_widget(spec, value, key, label, help_text)
    return st.number_input(label, value=value, key=key, help=help_text)


def unapplied(lab: Lab, changes: dict, preset: str) -> list[str]:
    """What Apply would change, one Markdown "`name` old → new" per knob (and the workload), in the sidebar's order."""
    cfg, said = lab.config, []
    for name, value in changes.items():
        now = getattr(cfg, name)
        if value != now:
            said.append(f"`{name}` {safe_text.code(knob_text(now))} → {safe_text.code(knob_text(value))}")
    if preset != (lab.preset or "none"):
        said.append(f"`preset` {safe_text.code(lab.preset or 'none')} → {safe_text.code(preset)}")
    return said


def render(lab: Lab) -> None:
    with st.sidebar:
        st.markdown("### Engine")
        _engine_knobs()
        cfg = lab.config
        show("sidebar")
        st.caption(f"Model: `{cfg.model}` · {lab.engine.backend.label} attention on {cfg.device}")
        caveat = victim_caveat(cfg.vllm_profile, cfg.preemption_victim)
        if caveat:
            st.warning(caveat, icon=":material/warning:")
        _pool_finder()
        st.markdown("### Modelled target")
        target.picker("sb_", horizontal=False)
        most_blocks = knob_named("num_gpu_blocks").maximum
        assert most_blocks is not None  # num_gpu_blocks has an app_max (an int)
        target.pool_in_gib(lab, apply, int(most_blocks))


@st.fragment
def _engine_knobs() -> None:
    """The release, the knobs it has and the workload; what Apply would change; Apply. A change reruns this alone."""
    lab: Lab = st.session_state.lab
    cfg = lab.config
    if st.session_state.get("cfg_for") is not cfg:  # another engine since (a class's Explore, a replay): its values
        for key in [k for k in st.session_state if str(k).startswith("cfg_")]:
            del st.session_state[key]
        st.session_state.cfg_for = cfg
    top = st.empty()
    chosen = widget(knob_named("vllm_profile"), cfg.vllm_profile, lab, cfg.vllm_profile) or cfg.vllm_profile
    if chosen != cfg.vllm_profile:
        st.caption(f"{chosen}'s knobs are below; Apply switches the engine to it.")
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
    # A widget cleared to None keeps the current value unless the knob itself may be None.
    changes = {name: value for name, value in shown.items() if value is not None or knob_named(name).optional}
    pending = unapplied(lab, changes, preset)
    if pending:
        with top:  # also where the knobs start: a change made there is seen as unapplied at once
            st.caption(f":orange[:material/edit_note: {len(pending)} unapplied — Apply below]")
        st.warning(
            f"**Unapplied changes** (the engine still runs the old values): {'; '.join(pending)}.",
            icon=":material/edit_note:",
        )
    if st.button(
        "Apply (rebuilds the engine)",
        key="apply",
        type="primary",
        width="stretch",
        help="Rebuild the engine with these knobs and this workload, at step 0.",
    ):
        changes, pool_note = with_swap_pool(changes, cfg)
        apply(lab, changes, preset, pool_note)


@st.fragment
def _pool_finder() -> None:
    """The smallest-pool search: its probes rerun this alone (with a progress bar); applying its answer, the app."""
    pool_finder.render(st.session_state.lab, apply, int(knob_named("num_gpu_blocks").maximum or 1))


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
    st.rerun(scope="app")  # from the sidebar's fragments too: every view shows the new engine
