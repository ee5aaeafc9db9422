"""The Sweep page's form: the workload (a preset, its sizes following it: a preset named without sizes means the
same requests everywhere), the swept values, the release every series runs under (v0.6 by default, the release that
has both recompute and swap), the modes, extra series on other releases (refused unless Compare across releases is
ticked), repeats per point, victim policies. Each axis keeps its own inputs. Returns the spec on submit."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from pykv.border.config import EngineConfig
from pykv.border.preemption_choices import POLICY_LABELS
from pykv.border.vllm_profiles import PROFILES
from pykv.border.workload import PRESETS, preset_defaults
from pykv.lab.sweep import (
    DEFAULT_MODES,
    DEFAULT_PROFILE,
    DEFAULT_REPEATS,
    DEFAULT_VALUES,
    DEFAULT_WORKLOAD,
    MAX_REPEATS,
    MODES,
    Series,
    SweepSpec,
    count_values,
    parse_values,
    release_name,
)
from pykv.ui.session import state

AXIS_NAMES = {"num_gpu_blocks": "pool size (blocks)", "block_size": "block size", "max_num_seqs": "max_num_seqs"}
MAX_RUNS = 60  # engine runs (points x repeats): a sweep past this is a typo more often than a plan


@dataclass(frozen=True)
class FormDefaults:
    values: str
    modes: tuple[str, ...]
    num_gpu_blocks: int
    max_num_seqs: int = 8
    block_size: int = 16
    sizes: dict | None = None  # the workload's sizes where the axis needs others than the preset's own


DEFAULTS = {
    "num_gpu_blocks": FormDefaults(",".join(map(str, DEFAULT_VALUES)), DEFAULT_MODES, 64),  # the default sweep
    "block_size": FormDefaults(
        "4,8,16,32", ("recompute", "swap", "swap per-block"), 32, sizes={"n": 8, "max_tokens": 96}
    ),  # 8 x 96 tokens on a pool of 512 tokens: preemptions at every block size
    # 16 requests on a pool that carries 6 of them to the end (shipped model): the preemption storm
    "max_num_seqs": FormDefaults(
        "2,4,6,8,12,16", DEFAULT_MODES, 48, max_num_seqs=16, sizes={"n": 16, "max_tokens": 96}
    ),
}
# Extra series: every mode on every release that has it ("recompute@v0.33"), beside the sweep's own release.
EXTRA_SERIES = [f"{mode}@{name}" for name in PROFILES for mode in MODES if Series(mode, name).missing() is None]


def _sizes(axis: str, preset: str) -> dict:
    d = DEFAULTS[axis]
    return dict(d.sizes) if d.sizes and preset == DEFAULT_WORKLOAD else preset_defaults(preset)


def _follow_preset(axis: str) -> None:
    """A new preset brings its own sizes into the form (a storm is 12 x 128 tokens wherever it is named)."""
    sizes = _sizes(axis, st.session_state[f"sw_preset_{axis}"])
    st.session_state[f"sw_n_{axis}"] = sizes["n"]
    st.session_state[f"sw_max_tokens_{axis}"] = sizes["max_tokens"]


def _extra_label(entry: str) -> str:
    mode, _, name = entry.partition("@")
    return Series(mode, name).label


def sweep_form(axis: str) -> SweepSpec | None:
    """The sweep form for ``axis``; the spec on submit (every point's config validated), else None."""
    d = DEFAULTS[axis]
    preset = st.selectbox(
        "Workload",
        list(PRESETS),
        index=list(PRESETS).index(DEFAULT_WORKLOAD),
        key=f"sw_preset_{axis}",
        on_change=_follow_preset,
        args=(axis,),
        help="A preset means the same requests on every page, command and lesson; its sizes follow it below.",
    )
    sizes = _sizes(axis, preset)
    st.session_state.setdefault(f"sw_n_{axis}", sizes["n"])
    st.session_state.setdefault(f"sw_max_tokens_{axis}", sizes["max_tokens"])
    with st.form(f"sweep_form_{axis}"):
        c1, c2, c3 = st.columns(3)
        n = c1.number_input("requests", 1, 256, key=f"sw_n_{axis}")
        max_tokens = c2.number_input("max_tokens each", 1, 1024, key=f"sw_max_tokens_{axis}")
        repeats = c3.number_input(
            "repeats per point",
            1,
            MAX_REPEATS,
            DEFAULT_REPEATS,
            key=f"sw_repeats_{axis}",
            help="Each point runs this many times: its times are the median, with bars from the fastest to the "
            "slowest run. Counts are the same every time.",
        )
        values = st.text_input(
            f"{AXIS_NAMES[axis]} values",
            d.values,
            key=f"sw_values_{axis}",
            help="start:stop:step (stop included), e.g. 16:128:16, or a list: 16,32,64",
        )
        fixed = {}
        cols = iter(st.columns(2))
        for name, label, default in (
            ("num_gpu_blocks", "pool size (blocks)", d.num_gpu_blocks),
            ("block_size", "block size (tokens)", d.block_size),
            ("max_num_seqs", "max_num_seqs", d.max_num_seqs),
        ):
            if name != axis:
                fixed[name] = next(cols).number_input(label, 1, 4096, default, key=f"sw_{name}_{axis}")
        if axis == "block_size":
            st.caption("Each block size keeps the pool's capacity in tokens (pool size x 16).")
        c1, c2 = st.columns([1, 2])
        profile = c1.selectbox(
            "Release",
            list(PROFILES),
            index=list(PROFILES).index(DEFAULT_PROFILE),
            format_func=lambda name: f"{name}: {release_name(PROFILES[name])}",
            key=f"sw_profile_{axis}",
            help="Every mode runs under this release's rules, so only the mode differs between the lines. "
            f"{DEFAULT_PROFILE} is the release that has recompute, swap and auto.",
        )
        modes = c2.multiselect(
            "Modes",
            list(MODES),
            list(d.modes),
            key=f"sw_modes_{axis}",
            help="+prefix: with prefix caching; auto: swap a request with several sequences, recompute the rest "
            "(V0); +offload: V1's CPU offloading tier (vLLM 0.11.1+), full prompt blocks only; per-block: one "
            "copy per block, layer and K/V",
        )
        extra = st.multiselect(
            "Series on other releases",
            EXTRA_SERIES,
            [],
            format_func=_extra_label,
            key=f"sw_extra_{axis}",
            help="An extra line under another release (V1's recompute, say), named with its release. Its lines "
            "differ in more than the mode: tick Compare across releases to run it.",
        )
        across = st.checkbox(
            "Compare across releases",
            False,
            key=f"sw_across_{axis}",
            help="Allow series on other releases than the one above; without it such a sweep is refused.",
        )
        policies = st.multiselect(
            "Victim policies",
            list(POLICY_LABELS),
            ["last"],
            key=f"sw_policies_{axis}",
            help="; ".join(f"{k}: {v}" for k, v in POLICY_LABELS.items()),
        )
        if not st.form_submit_button("Run sweep", type="primary"):
            return None
    try:
        return _spec(
            axis, preset, int(n), int(max_tokens), int(repeats), values, fixed, profile, modes, extra, across, policies
        )
    except ValueError as e:
        st.error(str(e))
        return None


def _spec(axis, preset, n, max_tokens, repeats, values, fixed, profile, modes, extra, across, policies) -> SweepSpec:
    entries = [*modes, *extra]
    points = count_values(values) * len(entries) * max(1, len(policies))  # counted, not listed: 1:300000:1 is free
    if points * repeats > MAX_RUNS:
        raise ValueError(
            f"That is {points * repeats} runs ({points} points x {repeats} repeats); the page runs at most "
            f"{MAX_RUNS}. Use fewer values, modes or repeats (or the command line: python -m pykv sweep)."
        )
    base = EngineConfig(model=state.model_name(), vllm_profile=profile, **({"block_size": 16} | fixed))
    spec = SweepSpec(
        workload=preset,
        workload_args={"n": n, "max_tokens": max_tokens},
        axis=axis,
        values=parse_values(values),
        modes=tuple(entries),
        base=base,
        policies=tuple(policies),
        repeats=repeats,
        across_releases=across,
    )
    spec.configs()  # validates every run's config up front
    return spec
