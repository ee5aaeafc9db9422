"""A sweep's series: one preemption mode under one vLLM release. A comparison changes the mode and holds the
release: by default every series runs under the sweep's own profile (v0.6, the release that has both recompute and
swap), and a series on another release (``recompute@v0.33``: V1's recompute) is an extra, named with its release,
that a sweep runs only when asked to compare across releases. Nothing here picks a release for a mode silently.

    "recompute"           -> recompute under the sweep's profile
    "recompute@v0.33"     -> recompute under vLLM 0.33.0 (V1)
    "recompute+offload@v0.33"
"""

from __future__ import annotations

from dataclasses import dataclass

from pykv.border.vllm_profiles import PROFILES, VllmProfile, newest_profile

# Named modes: the engine settings each stands for.
MODES: dict[str, dict] = {
    "recompute": {"preemption_mode": "recompute", "enable_prefix_caching": False},
    "swap": {"preemption_mode": "swap", "enable_prefix_caching": False, "swap_copy": "batched"},
    "auto": {"preemption_mode": "auto", "enable_prefix_caching": False, "swap_copy": "batched"},
    "swap per-block": {"preemption_mode": "swap", "enable_prefix_caching": False, "swap_copy": "per_block"},
    "recompute+prefix": {"preemption_mode": "recompute", "enable_prefix_caching": True},
    "recompute+offload": {"preemption_mode": "recompute", "enable_prefix_caching": False},
    "swap+prefix": {"preemption_mode": "swap", "enable_prefix_caching": True, "swap_copy": "batched"},
}
OFFLOAD_MODES = ("recompute+offload",)  # V1's CPU offloading tier (vLLM 0.11.1+)
CPU_POOL_MODES = ("swap", "auto")  # preemption modes that need a CPU swap pool
SWAP_PROFILE = newest_profile(lambda p: p.swaps)  # the newest release that swaps (V0): the sweep's default
OFFLOAD_PROFILE = newest_profile(lambda p: p.has_kv_offloading)  # the newest with the offloading tier (V1)
ACROSS = "tick Compare across releases (CLI: --compare-across-releases)"


def release_name(profile: VllmProfile) -> str:
    """``vLLM 0.6.3 (V0)``: the release a series follows and its engine generation, as legends say it."""
    release = profile.release.split(".post")[0]
    return f"vLLM {release} ({profile.engine.value})"


@dataclass(frozen=True)
class Series:
    """One line of a sweep: a mode (a key of MODES) under one vLLM profile."""

    mode: str
    profile: str  # a vllm_profile name

    @property
    def release(self) -> str:
        return release_name(PROFILES[self.profile])

    @property
    def label(self) -> str:
        """``recompute, vLLM 0.6.3 (V0)``: every legend, table and CSV row names the release of its series."""
        return f"{self.mode}, {self.release}"

    @property
    def spelled(self) -> str:
        """How the CLI's --modes writes it: ``recompute@v0.33``."""
        return f"{self.mode}@{self.profile}"

    def missing(self) -> str | None:
        """Why this mode does not exist in this release (one clause), or None."""
        p = PROFILES[self.profile]
        preemption = MODES[self.mode]["preemption_mode"]
        if preemption not in p.preemption_modes:
            both = release_name(PROFILES[SWAP_PROFILE])
            return (
                f"{self.mode} is not in {self.release}, which always recomputes: sweep under {SWAP_PROFILE} "
                f"({both}, which has recompute, swap and auto), or add {self.mode}@{SWAP_PROFILE} and {ACROSS}"
            )
        if self.mode in OFFLOAD_MODES and not p.has_kv_offloading:
            return (
                f"{self.mode} needs V1's CPU offloading tier (vLLM 0.11.1+), which {self.release} lacks: add it as "
                f"{self.mode}@{OFFLOAD_PROFILE} and {ACROSS}"
            )
        return None


def parse_series(entries: tuple[str, ...], base_profile: str) -> tuple[Series, ...]:
    """``("recompute", "swap", "recompute@v0.33")`` under ``base_profile``: one Series each, in order; ValueError (one
    line) for an unknown mode or release, a series listed twice, or a mode its release does not have."""
    unknown = [e.split("@")[0].strip() for e in entries if e.split("@")[0].strip() not in MODES]
    if unknown:
        raise ValueError(f"Unknown modes {unknown}; choose from {', '.join(MODES)}.")
    out: list[Series] = []
    for entry in entries:
        mode, _, release = (part.strip() for part in entry.partition("@"))
        if "@" in entry and release not in PROFILES:
            raise ValueError(
                f"{entry!r} names no release: after @ write a vllm_profile ({', '.join(PROFILES)}), e.g. {mode}@v0.33."
            )
        series = Series(mode, release or base_profile)
        if series in out:
            raise ValueError(f"{series.label} is listed twice; list each mode and release once.")
        problem = series.missing()
        if problem:
            raise ValueError(f"{problem}.")
        out.append(series)
    return tuple(out)


def check_one_release(series: tuple[Series, ...], base_profile: str, across_releases: bool) -> None:
    """Refuse (one line) a sweep whose series run under more than one release unless it asked to compare across
    releases: lines that differ in their release differ in more than the mode."""
    others = [s for s in series if s.profile != base_profile]
    if others and not across_releases:
        names = ", ".join(s.spelled for s in others)
        base = release_name(PROFILES[base_profile])
        raise ValueError(
            f"{names} would run on another release than the sweep's ({base_profile}, {base}), so its lines would "
            f"differ in more than the mode: sweep them under one release, or {ACROSS}."
        )
