"""The sidebar: engine configuration under vLLM's flag names, and the workload. Apply rebuilds the
engine; an invalid choice shows the engine's own message and leaves the running engine as it was."""

from __future__ import annotations

import streamlit as st
import torch

from pykv.config import ATTENTION_BACKENDS, PREEMPTION_MODES
from pykv.ui import state
from pykv.ui.lab import Lab
from pykv.viz.narration import fmt_bytes
from pykv.workload import PRESETS

PRESET_LABELS = {
    "burst": "burst — 8 short requests at once",
    "shared_prefix": "shared system prompt (prefix caching)",
    "long_context": "long context — long prompts beside short",
    "storm": "storm — over-subscribed pool",
    "spread": "spread — one arrival every 4 steps",
    "none": "none — only requests added by hand",
}


def render(lab: Lab) -> None:
    cfg = lab.config
    with st.sidebar:
        st.markdown("### Engine")
        with st.form("config", border=False):
            blocks = st.slider("num_gpu_blocks — KV pool size (blocks)", 4, 512, cfg.num_gpu_blocks, key="cfg_blocks",
                               help="Physical KV blocks on the device. Shrink it to force preemption.")
            block_size = st.selectbox("block_size", [1, 2, 4, 8, 16, 32, 64], index=_index([1, 2, 4, 8, 16, 32, 64], cfg.block_size),
                                      key="cfg_block_size", help="Tokens per KV block (vLLM default 16).")
            cpu_blocks = st.number_input("num_cpu_blocks", 0, 4096, cfg.num_cpu_blocks or 0, key="cfg_cpu_blocks",
                                         help="CPU swap pool in blocks (vLLM sizes it in GiB with --swap-space). "
                                              f"One block here is {fmt_bytes(lab.engine.bytes_per_block)}. 0 = no swap pool.")
            max_seqs = st.number_input("max_num_seqs", 1, 256, cfg.max_num_seqs, key="cfg_max_seqs",
                                       help="Most requests in the running batch at once.")
            budget = st.number_input("max_num_batched_tokens", 1, 8192, cfg.max_num_batched_tokens, key="cfg_budget",
                                     help="Token budget of one step (prefill chunks + decodes).")
            mode = st.segmented_control("preemption_mode", list(PREEMPTION_MODES), default=cfg.preemption_mode,
                                        key="cfg_mode", required=True,
                                        help="What happens to a victim when the pool is full: recompute (drop its KV, "
                                             "re-prefill later), swap (copy its blocks to the CPU pool), or auto.")
            prefix = st.toggle("enable_prefix_caching", cfg.enable_prefix_caching, key="cfg_prefix",
                               help="Reuse full blocks whose token prefix was computed before (hash kept after free).")
            chunked = st.toggle("enable_chunked_prefill", cfg.enable_chunked_prefill, key="cfg_chunked",
                                help="Split long prompts over several steps to fit the token budget.")
            devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
            device = st.selectbox("device", devices + ([cfg.device] if cfg.device not in devices else []),
                                  index=_index(devices + [cfg.device], cfg.device), key="cfg_device",
                                  help="Where the model and the device KV pool live.")
            backend = st.selectbox("attention_backend", list(ATTENTION_BACKENDS),
                                   index=_index(list(ATTENTION_BACKENDS), cfg.attention_backend), key="cfg_backend",
                                   help="torch = reference attention; triton = the project's kernels (on CPU they run "
                                        "through Triton's interpreter: ~30-60x slower steps, watch the step time).")
            st.markdown("### Workload")
            options = list(PRESETS) + ["none"]
            preset = st.selectbox("preset", options, index=_index(options, lab.preset or "none"), key="cfg_preset",
                                  format_func=lambda p: PRESET_LABELS.get(p, p),
                                  help="Seeded request mixes from pykv.workload; add more requests by hand any time.")
            applied = st.form_submit_button("Apply (rebuilds the engine)", type="primary", width="stretch")
        if applied:
            changes = dict(num_gpu_blocks=int(blocks), block_size=int(block_size),
                           num_cpu_blocks=int(cpu_blocks) or None, max_num_seqs=int(max_seqs),
                           max_num_batched_tokens=int(budget), preemption_mode=mode or cfg.preemption_mode,
                           enable_prefix_caching=bool(prefix), enable_chunked_prefill=bool(chunked),
                           device=device, attention_backend=backend)
            apply(lab, changes, preset)
        st.caption(f"Model: `{cfg.model}` · {lab.engine.backend.name} attention on {cfg.device}")


def apply(lab: Lab, changes: dict, preset: str) -> None:
    """Rebuild the session's engine; on ValueError show it and keep the current one."""
    try:
        new_lab = state.make_lab(lab.config.replace(**changes), None if preset == "none" else preset)
    except ValueError as e:
        st.error(f"Not applied: {e}")
        return
    st.session_state.lab = new_lab
    st.session_state.playing = False
    st.rerun()


def _index(options: list, value) -> int:
    return options.index(value) if value in options else 0
