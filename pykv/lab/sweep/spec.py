"""What a sweep runs: one seeded workload preset over the values of one axis, once per series (a mode under a vLLM
release, see ``series``) and victim policy, each point ``repeats`` times. Its defaults are the Sweep page's and
``python -m pykv sweep``'s default sweep."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from pykv.border.config import EngineConfig
from pykv.border.preemption_choices import POLICY_LABELS
from pykv.border.workload import PRESETS, check_preset_args, preset_defaults
from pykv.lab.sweep.series import (
    CPU_POOL_MODES,
    MODES,
    OFFLOAD_MODES,
    SWAP_PROFILE,
    Series,
    check_one_release,
    parse_series,
)
from pykv.lab.sweep.values import check_values

AXES = ("num_gpu_blocks", "block_size", "max_num_seqs")
DEFAULT_PROFILE = SWAP_PROFILE  # v0.6: the release that has recompute, swap and auto, so only the mode changes
DEFAULT_WORKLOAD = "small_storm"  # 8 x 48 tokens, each request ending with 5 blocks of 16: 40 carry them all
DEFAULT_VALUES = (20, 28, 36)  # pools holding half, most and nearly all of what the storm needs
DEFAULT_MODES = ("recompute", "swap")
DEFAULT_REPEATS = 3  # each point's median and spread; the default sweep stays <= 15 s on a quiet 2-core CPU
MAX_REPEATS = 9


def default_base(**changes) -> EngineConfig:
    """The engine a sweep varies, unless told otherwise: today's defaults under the sweep's default release."""
    return EngineConfig(**({"vllm_profile": DEFAULT_PROFILE} | changes))


class SweepPoint(NamedTuple):
    """One point of a sweep: a series and policy at one axis value, and the engine it runs."""

    label: str  # the series' label, "recompute, vLLM 0.6.3 (V0)" (with " · policy" when a sweep has several)
    value: int
    config: EngineConfig
    series: Series
    policy: str


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep. ``modes``: each a mode (a key of MODES) run under ``base``'s release, or ``mode@profile`` on
    another release, which needs ``across_releases``. With ``axis="block_size"`` the pool keeps its token capacity
    (``num_gpu_blocks * block_size`` of ``base``), so only the block granularity changes. ``workload_args`` is
    completed with the preset's own sizes, so a spec always says which requests it ran."""

    workload: str = DEFAULT_WORKLOAD
    workload_args: dict = field(default_factory=dict)
    seed: int = 0
    axis: str = "num_gpu_blocks"
    values: tuple[int, ...] = DEFAULT_VALUES
    modes: tuple[str, ...] = DEFAULT_MODES
    base: EngineConfig = field(default_factory=default_base)
    cpu_pool_factor: int = 4  # swap and offload modes get a CPU pool this many times the device pool
    policies: tuple[str, ...] = ("last",)  # preemption_victim values; each mode runs once per policy
    repeats: int = DEFAULT_REPEATS  # runs per point: its timings' median and spread (counts are the same each time)
    across_releases: bool = False  # allow series on other releases than base's

    def __post_init__(self) -> None:
        if self.axis not in AXES:
            raise ValueError(f"axis must be one of {AXES}, got {self.axis!r}.")
        if not self.modes:
            raise ValueError("Choose at least one mode.")
        check_values(tuple(self.values))
        if not self.policies:
            raise ValueError("Choose at least one victim policy.")
        bad = [p for p in self.policies if p not in POLICY_LABELS]
        if bad:
            raise ValueError(f"Unknown victim policies {bad}; choose from {', '.join(POLICY_LABELS)}.")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or not 1 <= self.repeats <= MAX_REPEATS:
            raise ValueError(f"repeats must be a whole number from 1 to {MAX_REPEATS}, got {self.repeats!r}.")
        if self.workload not in PRESETS:
            raise ValueError(f"A sweep runs a workload preset ({', '.join(PRESETS)}), not {self.workload!r}.")
        check_preset_args(self.workload, seed=self.seed, **self.workload_args)
        object.__setattr__(self, "workload_args", preset_defaults(self.workload) | dict(self.workload_args))
        check_one_release(self.series, self.base.vllm_profile, self.across_releases)

    @property
    def series(self) -> tuple[Series, ...]:
        return parse_series(tuple(self.modes), self.base.vllm_profile)

    @property
    def profiles(self) -> tuple[str, ...]:
        """The releases the series run under, the base's first."""
        names = [self.base.vllm_profile] + [s.profile for s in self.series]
        return tuple(dict.fromkeys(names))

    @property
    def num_points(self) -> int:
        """How many points :meth:`configs` gives (one per value, series and policy), without building them."""
        return len(self.values) * len(self.modes) * len(self.policies)

    @property
    def num_runs(self) -> int:
        """Engine runs: every point ``repeats`` times."""
        return self.num_points * self.repeats

    def configs(self) -> list[SweepPoint]:
        """Every point, in order (value, then series, then policy). Configs are validated here, up front."""
        points = []
        capacity = self.base.num_gpu_blocks * self.base.block_size
        for value in self.values:
            for series in self.series:
                for policy in self.policies:
                    points.append(self._point(series, policy, value, capacity))
        return points

    def _point(self, series: Series, policy: str, value: int, capacity: int) -> SweepPoint:
        changes = dict(MODES[series.mode]) | {"preemption_victim": policy}
        if self.axis == "block_size":
            changes |= {"block_size": value, "num_gpu_blocks": max(1, capacity // value)}
        else:
            changes[self.axis] = value
        blocks = changes.get("num_gpu_blocks", self.base.num_gpu_blocks)
        if changes["preemption_mode"] in CPU_POOL_MODES:
            changes["num_cpu_blocks"] = self.cpu_pool_factor * blocks
        if series.mode in OFFLOAD_MODES:
            changes["num_offload_blocks"] = self.cpu_pool_factor * blocks
        label = f"{series.mode} · {policy}, {series.release}" if len(self.policies) > 1 else series.label
        return SweepPoint(label, value, self.base.with_profile(series.profile, **changes)[0], series, policy)

    def workload_text(self) -> str:
        """``small_storm (n=8, max_tokens=96), seed 0``: the requests, said in full."""
        sized = ", ".join(f"{k}={v}" for k, v in self.workload_args.items())
        return f"{self.workload} ({sized}), seed {self.seed}"
