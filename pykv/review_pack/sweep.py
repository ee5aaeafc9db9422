"""A sweep as a review pack: what was swept (workload, axis, values, modes, the base configuration and its
vLLM command), the sweep's charts, and its runs and preemptions as tables and CSVs."""

from __future__ import annotations

from typing import Optional

from pykv.border.config import EngineConfig
from pykv.border.vllm_command import serve_command
from pykv.engine.kv.cache_engine import CacheEngine
from pykv.engine.max_model_len import fit_max_model_len
from pykv.engine.model.model import ModelConfig
from pykv.lab.sweep import MODES, PREEMPTION_COLUMNS, RUN_COLUMNS, SweepResult, SweepSpec
from pykv.review_pack.config_section import config_section
from pykv.review_pack.page import (
    PackFigure,
    ReviewPack,
    Section,
    code_block,
    definition_list,
    even,
    frame_table,
    para,
)
from pykv.viz import block_size_cost_figure, preemption_cost_figure, runs_figure

RUN_TABLE_COLUMNS = ["mode", "vllm_profile", "value", "preemptions", "recomputed_tokens", "swapped_bytes", "wall_s",
                     "tokens_per_s", "recompute_s", "swap_s", "modelled_pcie_gen5_s"]  # the CSV has every column
PREEMPTION_TABLE_COLUMNS = ["mode", "value", "preemption_mode", "seq_len", "num_bytes", "measured_s",
                            "recomputed_tokens", "steps_lost", "modelled_pcie_gen5_s"]
assert set(RUN_TABLE_COLUMNS) <= set(RUN_COLUMNS) and set(PREEMPTION_TABLE_COLUMNS) <= set(PREEMPTION_COLUMNS)
MAX_PREEMPTION_ROWS = 300  # rows of the preemptions table in the page (the CSV has them all)


def _engine_sizes(config: EngineConfig, model: Optional[ModelConfig]) -> tuple[Optional[int], Optional[int]]:
    """(bytes per block, the max_model_len the engine runs with) of a run, where the model is known."""
    if model is None:
        return None, None
    per_block = CacheEngine.bytes_per_block(model, config.block_size, config.dtype)
    try:
        return per_block, fit_max_model_len(config, model.max_position_embeddings, per_block)[0]
    except ValueError:  # a run whose engine would not start: its command keeps max_model_len as set
        return per_block, None


def sweep_pack(spec: SweepSpec, result: SweepResult, total: Optional[int] = None, seconds: Optional[float] = None,
               capacity: Optional[int] = None, model: Optional[ModelConfig] = None) -> ReviewPack:
    """``total``: the runs the sweep was to make (more than were made if it was stopped); ``capacity``: for a
    max_num_seqs sweep, how many requests the pool carries to the end (marked on the chart); ``model``: the
    sweep's model, whose shape gives each run's vLLM command its --swap-space and --max-model-len."""
    runs, costs = result.runs, result.preemptions
    total = total if total is not None else spec.num_runs
    device = ", ".join(sorted(runs["device"].astype(str).unique())) if len(runs) else spec.base.device
    args = ", ".join(f"{k}={v}" for k, v in spec.workload_args.items())
    summary = definition_list([
        ("workload", f"preset {spec.workload!r} ({args}), seed {spec.seed}"),
        ("swept", f"{spec.axis} over {', '.join(map(str, spec.values))}"),
        ("modes", "; ".join(f"{m} ({', '.join(f'{k}={v}' for k, v in MODES[m].items())})" for m in spec.modes)),
        ("runs", f"{len(runs)} of {total}" + (" (stopped early)" if result.cancelled else "")
         + (f" in {seconds:.1f} s" if seconds is not None else "")),
        ("device (measured on)", device),
    ]) + para("Swap modes run under vllm_profile=v0.6 (vLLM 0.6.3.post1), the last release that swapped; the "
              "vllm_profile column says which release each run followed. PCIe figures are modelled.", "muted")
    figs = [PackFigure("sweep-runs", "Every run of the sweep: wall time, throughput and preemptions per mode.",
                       runs_figure(runs, capacity=capacity))]
    if spec.axis == "block_size":
        figs.append(PackFigure("sweep-block-size-cost", "Preemption cost per KiB of KV against block size.",
                               block_size_cost_figure(costs)))
    figs.append(PackFigure("sweep-preemption-cost", "Each preemption's cost against the victim's sequence length.",
                           preemption_cost_figure(costs)))
    shown = costs[PREEMPTION_TABLE_COLUMNS].head(MAX_PREEMPTION_ROWS)
    cut = f" (the first {MAX_PREEMPTION_ROWS} of {len(costs)}; the CSV has them all)" if len(costs) > len(shown) else ""
    base_block, base_len = _engine_sizes(spec.base, model)
    commands = [f"# {mode}, {spec.axis}={value} (vllm_profile={config.vllm_profile})\n"
                + serve_command(config, *_engine_sizes(config, model)) for mode, value, config in spec.configs()]
    sections = (
        config_section(spec.base, base_block, "config", "Base configuration", max_model_len=base_len),
        Section("commands", "Every run in vLLM", (
            para("Each run's engine as the vLLM release its profile follows would start it."),
            code_block("\n\n".join(commands), "serve"))),
        Section("charts", "Charts", tuple(figs)),
        Section("runs", "Runs", (para(f"One row per run; times in seconds, measured on {device}."),
                                 frame_table(runs[RUN_TABLE_COLUMNS], "runs wide", even(RUN_TABLE_COLUMNS)))),
        Section("preemptions", "Preemptions", (para(f"Every preemption whose cost is complete{cut}."),
                                               frame_table(shown, "preemptions wide", even(PREEMPTION_TABLE_COLUMNS)))),
    )
    subtitle = f"A sweep of {spec.axis} by {', '.join(spec.modes)} on preset {spec.workload!r}, on {device}."
    return ReviewPack("pykv sweep review pack", subtitle, sections, summary=summary,
                      csvs={"sweep_runs.csv": runs.to_csv(index=False),
                            "sweep_preemptions.csv": costs.to_csv(index=False)})
