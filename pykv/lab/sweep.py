"""Sweeps: one seeded workload run to completion over a range of pool sizes (or block sizes, or
max_num_seqs), once per preemption mode (swap modes under vLLM V0's profile, the only one that swaps),
collecting what each run really cost on this device; and the storm's shape, which says where its
preemption count provably follows the pool size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import pandas as pd

from pykv.border.config import EngineConfig
from pykv.border.pcie import PCIE_GBPS, modelled_copy_seconds
from pykv.border.preemption_choices import POLICY_LABELS
from pykv.border.run_totals import MODELLED_PCIE_FIELDS, RUN_TOTALS_COLUMNS
from pykv.border.vllm_profiles import newest_profile
from pykv.border.workload import PRESETS, check_preset_args, make_workload
from pykv.engine.kv.kv_cache_manager import cdiv
from pykv.engine.model.loader import LoadedModel, load_model
from pykv.lab.completed_run import run_to_completion

# Named modes: the engine settings each stands for.
MODES: dict[str, dict] = {
    "recompute": {"preemption_mode": "recompute", "enable_prefix_caching": False},
    "swap": {"preemption_mode": "swap", "enable_prefix_caching": False, "swap_copy": "batched"},
    "swap per-block": {"preemption_mode": "swap", "enable_prefix_caching": False, "swap_copy": "per_block"},
    "recompute+prefix": {"preemption_mode": "recompute", "enable_prefix_caching": True},
    "recompute+offload": {"preemption_mode": "recompute", "enable_prefix_caching": False},
    "swap+prefix": {"preemption_mode": "swap", "enable_prefix_caching": True, "swap_copy": "batched"},
}
SWAP_PROFILE = newest_profile(lambda p: p.swaps)  # swap modes run under vLLM V0's rules: V1 has no swap
OFFLOAD_PROFILE = newest_profile(lambda p: p.has_kv_offloading)  # the CPU offloading tier is V1's (vLLM 0.11.1+)
OFFLOAD_MODES = ("recompute+offload",)
AXES = ("num_gpu_blocks", "block_size", "max_num_seqs")
RUN_CONFIG_COLUMNS = [  # what a run was: its mode, axis value and the config fields a sweep varies
    "mode",
    "vllm_profile",
    "axis",
    "value",
    "num_gpu_blocks",
    "block_size",
    "max_num_seqs",
    "preemption_mode",
    "prefix_caching",
    "swap_copy",
    "preemption_victim",
]
LATENCY_COLUMNS = ["ttft_p50_s", "ttft_p95_s", "tpot_p50_s", "tpot_p95_s"]
RUN_COLUMNS = [*RUN_CONFIG_COLUMNS, *RUN_TOTALS_COLUMNS, *LATENCY_COLUMNS, "device"]  # totals: RunTotals' fields
PREEMPTION_COLUMNS = [
    "mode",
    "value",
    "preemption_mode",
    "block_size",
    "seq_len",
    "num_bytes",
    "measured_s",
    "recomputed_tokens",
    "steps_lost",
    "device",
    *MODELLED_PCIE_FIELDS.values(),
]


MAX_SWEEP_VALUES = 64  # values on one axis
MAX_SWEEP_VALUE = 100_000  # any one value (the config's own bounds then apply per axis)
MAX_VALUES_TEXT = 1_000  # characters of a values string


def _quote(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def _ints(parts: list[str], text: str) -> list[int]:
    try:
        numbers = []
        for part in parts:
            part = part.strip()
            if not part or len(part) > 12:  # 12 digits is far past any bound: no int() of 5,000 digits
                raise ValueError
            numbers.append(int(part))
        return numbers
    except ValueError:
        raise ValueError(
            f"Cannot read values {_quote(text)}: use start:stop:step (e.g. 16:128:16) or a list "
            "(16,32,64) of whole numbers."
        ) from None


def count_values(text: str) -> int:
    """How many values ``text`` gives, computed without listing them (``1:10**8:1`` costs nothing);
    ValueError if the text cannot be read. :func:`parse_values` then bounds the count."""
    if not isinstance(text, str):
        raise ValueError(f"Sweep values must be text, got {type(text).__name__}.")
    if len(text) > MAX_VALUES_TEXT:
        raise ValueError(f"The values text is {len(text):,} characters; at most {MAX_VALUES_TEXT:,}.")
    if not text.strip():
        raise ValueError("No values given: use start:stop:step (e.g. 16:128:16) or a list (16,32,64).")
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ValueError(f"Cannot read values {_quote(text)}: a range is start:stop:step, e.g. 16:128:16.")
        start, stop, step = _ints(parts, text)
        if step < 1:
            raise ValueError(f"In {_quote(text)} the step must be a positive whole number, got {step}.")
        if stop < start:
            raise ValueError(
                f"{_quote(text)} gives no values: in start:stop:step the stop must not be below the start."
            )
        return (stop - start) // step + 1
    parts = text.split(",")
    _ints(parts, text)  # at most 500 short parts: MAX_VALUES_TEXT bounds them
    return len(parts)


def parse_values(text: str) -> tuple[int, ...]:
    """``16:128:16`` (start:stop:step, stop included) or ``16,32,64``: at most MAX_SWEEP_VALUES values,
    each 1..MAX_SWEEP_VALUE. The count is checked before any value is listed."""
    count = count_values(text)
    if count > MAX_SWEEP_VALUES:
        raise ValueError(
            f"{_quote(text)} gives {count:,} values; a sweep takes at most {MAX_SWEEP_VALUES}. "
            "Use a bigger step or fewer values."
        )
    if ":" in text:
        start, stop, step = _ints(text.split(":"), text)
        values = tuple(range(start, stop + 1, step))
    else:
        values = tuple(_ints(text.split(","), text))
    _check_values(values)
    return values


def _check_values(values: tuple) -> None:
    if not values or any(
        isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_SWEEP_VALUE for v in values
    ):
        shown = ", ".join(repr(v) for v in values[:8]) + (", ..." if len(values) > 8 else "")
        raise ValueError(f"Sweep values must be positive integers up to {MAX_SWEEP_VALUE:,}, got [{shown}].")
    if len(values) > MAX_SWEEP_VALUES:
        raise ValueError(f"A sweep takes at most {MAX_SWEEP_VALUES} values, got {len(values)}.")


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep. With ``axis="block_size"`` the pool keeps its token capacity
    (``num_gpu_blocks * block_size`` of ``base``), so only the block granularity changes."""

    workload: str = "storm"  # the default is the canonical storm: see StormShape
    workload_args: dict = field(default_factory=lambda: {"n": 8, "max_tokens": 96})
    seed: int = 0
    axis: str = "num_gpu_blocks"
    values: tuple[int, ...] = (24, 32, 40, 48, 56, 64)
    modes: tuple[str, ...] = ("recompute", "swap")
    base: EngineConfig = field(default_factory=EngineConfig)
    cpu_pool_factor: int = 4  # swap and offload modes get a CPU pool this many times the device pool
    policies: tuple[str, ...] = ("last",)  # preemption_victim values; each mode runs once per policy

    def __post_init__(self) -> None:
        if self.axis not in AXES:
            raise ValueError(f"axis must be one of {AXES}, got {self.axis!r}.")
        unknown = [m for m in self.modes if m not in MODES]
        if unknown:
            raise ValueError(f"Unknown modes {unknown}; choose from {', '.join(MODES)}.")
        _check_values(tuple(self.values))
        if not self.modes:
            raise ValueError("Choose at least one mode.")
        if not self.policies:
            raise ValueError("Choose at least one victim policy.")
        bad = [p for p in self.policies if p not in POLICY_LABELS]
        if bad:
            raise ValueError(f"Unknown victim policies {bad}; choose from {', '.join(POLICY_LABELS)}.")
        if self.workload not in PRESETS:
            raise ValueError(f"A sweep runs a workload preset ({', '.join(PRESETS)}), not {self.workload!r}.")
        check_preset_args(self.workload, seed=self.seed, **self.workload_args)

    @property
    def num_runs(self) -> int:
        """How many runs :meth:`configs` gives (one per value, mode and policy), without building them."""
        return len(self.values) * len(self.modes) * len(self.policies)

    def configs(self) -> list[tuple[str, int, EngineConfig]]:
        """Every run, in order: (mode, axis value, config). With several policies a run's mode reads "mode ·
        policy". Configs are validated here, up front."""
        runs = []
        capacity = self.base.num_gpu_blocks * self.base.block_size
        for value, mode, policy in ((v, m, p) for v in self.values for m in self.modes for p in self.policies):
            changes = dict(MODES[mode]) | {"preemption_victim": policy}
            if self.axis == "block_size":
                changes |= {"block_size": value, "num_gpu_blocks": max(1, capacity // value)}
            else:
                changes[self.axis] = value
            blocks = changes.get("num_gpu_blocks", self.base.num_gpu_blocks)
            profile: str = self.base.vllm_profile
            if changes["preemption_mode"] == "swap":
                changes["num_cpu_blocks"] = self.cpu_pool_factor * blocks
                profile = profile if self.base.profile.swaps else SWAP_PROFILE  # only V0 swaps
            if mode in OFFLOAD_MODES:
                changes["num_offload_blocks"] = self.cpu_pool_factor * blocks
                profile = profile if self.base.profile.has_kv_offloading else OFFLOAD_PROFILE
            label = f"{mode} · {policy}" if len(self.policies) > 1 else mode
            runs.append((label, value, self.base.with_profile(profile, **changes)[0]))
        return runs

    def profile_notes(self) -> list[str]:
        """One line per mode that runs on another vLLM release than the base's (the sweep picks the release
        that has the mode), so a flag's release is never changed silently."""
        base = self.base.vllm_profile
        notes = []
        for mode in self.modes:
            if mode in OFFLOAD_MODES and not self.base.profile.has_kv_offloading:
                notes.append(
                    f"{mode} runs on {OFFLOAD_PROFILE}, not {base}: the CPU offloading tier is V1's (vLLM 0.11.1+)"
                )
            elif MODES.get(mode, {}).get("preemption_mode") == "swap" and not self.base.profile.swaps:
                notes.append(f"{mode} runs on {SWAP_PROFILE}, not {base}: only vLLM V0 swaps")
        return notes


@dataclass
class SweepResult:
    """``runs``: one row per run (RUN_COLUMNS). Times ending ``_s`` are measured on ``device`` except
    ``modelled_pcie_*``, the same swaps' bytes and copies priced at PCIe Gen4/Gen5 x16 (PCIE_GBPS plus the
    config's per-copy overhead). ``swapped_bytes`` counts each swap-out once; ``swap_s`` and
    ``swap_copies`` add the swap-in. ``preemptions``: one row per preemption whose cost is complete
    (PREEMPTION_COLUMNS): ``seq_len`` tokens lost, ``num_bytes`` of KV they held, ``measured_s`` =
    swap-out + swap-in copy time, or the re-prefill time apportioned to them (see pykv.engine.observe.costs)."""

    runs: pd.DataFrame
    preemptions: pd.DataFrame
    cancelled: bool = False


def run_one(
    config: EngineConfig, spec: SweepSpec, loaded: LoadedModel, mode: str, value: int
) -> tuple[dict, list[dict]]:
    run = run_to_completion(config, make_workload(spec.workload, seed=spec.seed, **spec.workload_args), loaded)
    records = run.engine.preemptions()
    ttft = pd.Series([o.ttft_s for o in run.outputs if o.ttft_s is not None], dtype=float)
    tpot = pd.Series([o.tpot_s for o in run.outputs if o.tpot_s is not None], dtype=float)
    row = {
        "mode": mode,
        "vllm_profile": config.vllm_profile,
        "axis": spec.axis,
        "value": value,
        "num_gpu_blocks": config.num_gpu_blocks,
        "block_size": config.block_size,
        "max_num_seqs": config.max_num_seqs,
        "preemption_mode": config.preemption_mode,
        "prefix_caching": config.enable_prefix_caching,
        "swap_copy": config.swap_copy,
        "preemption_victim": config.preemption_victim,
        **run.totals().as_row(),
        "ttft_p50_s": ttft.quantile(0.5),
        "ttft_p95_s": ttft.quantile(0.95),
        "tpot_p50_s": tpot.quantile(0.5),
        "tpot_p95_s": tpot.quantile(0.95),
        "device": config.device,
        "reports": run.reports,  # not a column: the schedule pykv.gpu_model prices for the page's modelled series
    }
    costs = []
    for r in records:
        if r.mode == "swap" and r.swap_out_s is not None and r.swap_in_s is not None:
            measured = r.swap_out_s + r.swap_in_s
        elif r.mode == "recompute" and r.recovered_step is not None:
            measured = r.recompute_s
        else:
            continue  # aborted, or never recovered (finished early): no complete cost to show
        copies = (r.swap_copies or 1) * 2
        costs.append(
            {
                "mode": mode,
                "value": value,
                "preemption_mode": r.mode,
                "block_size": config.block_size,
                "seq_len": r.num_tokens,
                "num_bytes": r.num_bytes,
                "measured_s": measured,
                "recomputed_tokens": r.recomputed_tokens,
                "steps_lost": r.steps_lost,
                "device": r.device,
                "step": r.step,
                "request_id": r.request_id,  # not columns: match the row to its modelled bill
                **{
                    MODELLED_PCIE_FIELDS[gen]: None
                    if r.mode != "swap"
                    else modelled_copy_seconds(2 * r.num_bytes, copies, gbps, config.pcie_copy_overhead_us)
                    for gen, gbps in PCIE_GBPS.items()
                },  # the same field names as RunTotals' (MODELLED_PCIE_FIELDS)
            }
        )
    return row, costs


def iter_runs(spec: SweepSpec, loaded: LoadedModel) -> Iterator[tuple[dict, list[dict]]]:
    """Each run of the spec, lazily, in order: (run row, its preemption rows)."""
    for mode, value, config in spec.configs():
        yield run_one(config, spec, loaded, mode, value)


def sweep_result(rows: list[dict], costs: list[dict], cancelled: bool = False) -> SweepResult:
    runs, preemptions = pd.DataFrame(rows, columns=RUN_COLUMNS), pd.DataFrame(costs, columns=PREEMPTION_COLUMNS)
    return SweepResult(runs, preemptions, cancelled)


def run_sweep(
    spec: SweepSpec,
    loaded: LoadedModel | None = None,
    on_progress: Callable[[int, int, dict], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> SweepResult:
    """Run every (value, mode) of the spec; each run is one unit of progress and a cancel point."""
    total = len(spec.configs())
    runs = iter_runs(spec, loaded or load_model(spec.base.model, spec.base.device, spec.base.dtype))
    rows: list[dict] = []
    costs: list[dict] = []
    for done in range(1, total + 1):
        if should_cancel is not None and should_cancel():
            return sweep_result(rows, costs, cancelled=True)
        row, run_costs = next(runs)
        rows.append(row)
        costs.extend(run_costs)
        if on_progress is not None:
            on_progress(done, total, row)
    return sweep_result(rows, costs)


@dataclass(frozen=True)
class StormShape:
    """How a storm (n equal prompts arriving together, outputs of one fixed length) meets a pool,
    when ``max_num_seqs >= n``.

    Each request ends holding ``blocks_per_request`` blocks, so a pool of P usable blocks carries
    ``P // blocks_per_request`` requests to the end (a pool is given as ``num_gpu_blocks``; under vLLM V1
    ``null_blocks`` = 1 of them is the null block, block 0, which no request holds). Within :attr:`band`,
    recompute preempts exactly ``n - P // blocks_per_request`` times, a count that never falls as the pool shrinks:
    every prompt is admitted at step 0, the outputs grow in lockstep, the last admitted are
    preempted one at a time until the rest fit, and the victims (too big to re-enter while the
    survivors run) come back together afterwards and fit then, so nobody is preempted twice.
    Outside the band this does not hold, and nothing here claims it: below the band victims collide
    again and re-enter out of step, so a bigger pool can preempt more (shipped model, 8 x 96 tokens:
    pool 17 -> 10 preemptions, pool 18 -> 11); swap can preempt more in a bigger pool anywhere,
    because a swapped request returns as soon as its blocks fit and may be preempted again (8 x 48
    tokens: pool 18 -> 6 swaps, pool 19 -> 8).
    """

    num_requests: int
    prompt_blocks: int  # blocks one prompt takes at admission
    blocks_per_request: int  # blocks one request holds when it finishes
    null_blocks: int = 0  # blocks the pool keeps back (V1's null block)

    @property
    def demand(self) -> int:
        """The smallest pool that never preempts."""
        return self.num_requests * self.blocks_per_request + self.null_blocks

    def carried(self, pool: int) -> int:
        """Requests a pool holds side by side to their last token."""
        return max(0, pool - self.null_blocks) // self.blocks_per_request

    def recompute_preemptions(self, pool: int) -> int:
        """The count recompute makes within :attr:`band`."""
        return max(0, self.num_requests - self.carried(pool))

    @property
    def band(self) -> range:
        """Pools that admit every prompt at once and fit all the victims together afterwards."""
        lo = self.num_requests * self.prompt_blocks + self.null_blocks
        while self.recompute_preemptions(lo) * self.blocks_per_request > lo - self.null_blocks:
            lo += 1
        return range(lo, self.demand + 1)


def storm_shape(spec: SweepSpec, loaded: LoadedModel) -> StormShape | None:
    """The shape of the spec's workload at its base block size; None unless the workload is a storm."""
    if spec.workload != "storm":
        return None
    requests = make_workload(spec.workload, seed=spec.seed, **spec.workload_args).requests
    prompt, size = max(len(loaded.encode(r.prompt or "")) for r in requests), spec.base.block_size  # text prompts
    return StormShape(
        len(requests),
        cdiv(prompt, size),
        cdiv(prompt + requests[0].max_tokens, size),
        int(spec.base.profile.null_block),
    )
