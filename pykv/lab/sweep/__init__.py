"""Sweeps: one seeded workload run to completion over a range of pool sizes (or block sizes, or max_num_seqs), once
per series (a preemption mode under one vLLM release: by default every series under v0.6, the release that has both
recompute and swap, so that only the mode changes), each point several times, collecting what each run really cost
on this device on the wall clock and the engine thread's CPU clock; and the storm's shape, which says where its
preemption count provably follows the pool size.

    values   the axis' values as typed (16:128:16, 16,32,64)
    series   a mode under a release; the refusal to mix releases unless asked
    spec     SweepSpec: what to run, its defaults, its points (configs)
    repeats  a point's repeats as one row: medians, spreads, counts once
    runner   running the points; the runs and preemptions frames
    storm    StormShape: the storm's band
"""

from pykv.lab.sweep.runner import (
    PREEMPTION_COLUMNS,
    RUN_COLUMNS,
    RUN_CONFIG_COLUMNS,
    SweepResult,
    iter_runs,
    run_one,
    run_point,
    run_sweep,
    sweep_result,
)
from pykv.lab.sweep.series import (
    MODES,
    OFFLOAD_MODES,
    OFFLOAD_PROFILE,
    SWAP_PROFILE,
    Series,
    parse_series,
    release_name,
)
from pykv.lab.sweep.spec import (
    AXES,
    DEFAULT_MODES,
    DEFAULT_PROFILE,
    DEFAULT_REPEATS,
    DEFAULT_VALUES,
    DEFAULT_WORKLOAD,
    MAX_REPEATS,
    SweepPoint,
    SweepSpec,
    default_base,
)
from pykv.lab.sweep.storm import StormShape, band_applies, storm_shape
from pykv.lab.sweep.values import MAX_SWEEP_VALUE, MAX_SWEEP_VALUES, MAX_VALUES_TEXT, count_values, parse_values

__all__ = [
    "AXES",
    "DEFAULT_MODES",
    "DEFAULT_PROFILE",
    "DEFAULT_REPEATS",
    "DEFAULT_VALUES",
    "DEFAULT_WORKLOAD",
    "MAX_REPEATS",
    "MAX_SWEEP_VALUE",
    "MAX_SWEEP_VALUES",
    "MAX_VALUES_TEXT",
    "MODES",
    "OFFLOAD_MODES",
    "OFFLOAD_PROFILE",
    "PREEMPTION_COLUMNS",
    "RUN_COLUMNS",
    "RUN_CONFIG_COLUMNS",
    "SWAP_PROFILE",
    "Series",
    "StormShape",
    "band_applies",
    "SweepPoint",
    "SweepResult",
    "SweepSpec",
    "count_values",
    "default_base",
    "iter_runs",
    "parse_series",
    "parse_values",
    "release_name",
    "run_one",
    "run_point",
    "run_sweep",
    "storm_shape",
    "sweep_result",
]
