"""How each vLLM release spells one of pykv's knobs on ``vllm serve``: the ``vllm=`` part of a knob in
``EngineConfig``'s table. Every flag was read in that release's own ``vllm/engine/arg_utils.py``
(``EngineArgs`` and ``EngineArgs.add_cli_args``); a release without the knob says why, never a made-up flag.

    0.6.3.post1  --block-size (choices 8, 16, 32), --enable-prefix-caching (store_true),
                 --enable-chunked-prefill [true|false] (StoreBoolean), --swap-space, --preemption-mode,
                 --device, --num-gpu-blocks-override, --max-num-seqs, --max-num-batched-tokens, ...
    0.10.2       the V1 flags; booleans are BooleanOptionalAction (--no-enable-prefix-caching); --block-size
                 takes 1, 8, 16, 32, 64, 128 (config/cache.py BlockSize); --swap-space and --preemption-mode
                 still parse, but a non-default --preemption-mode falls back to the V0 engine
                 (EngineArgs._is_v1_supported_oracle); no --device, no --watermark
    0.33.0       as 0.10.2, --block-size any positive int, plus --watermark (config/scheduler.py) and
                 --kv-offloading-size (the size alone turns the tier on: --kv-offloading-backend defaults to
                 native, config/cache.py CacheConfig); no --swap-space or --preemption-mode

--kv-offloading-size came in 0.11.1 (not in 0.11.0's arg_utils.py). In 0.11.1, 0.11.2 and 0.12.0 the backend
has no default and the size alone does nothing (config/vllm.py VllmConfig._post_init_kv_transfer_config
returns while kv_offloading_backend is None); by 0.20.0 the backend defaults to native (OFFLOADING_RELEASES).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pykv.border.vllm_profiles import PROFILES

Style = Literal["value", "store_true", "store_boolean", "bool_optional"]


@dataclass(frozen=True)
class Flag:
    """How one release spells a knob: ``vllm serve`` flag, ``EngineArgs`` field and argparse style."""

    flag: str
    kwarg: str
    style: Style = "value"
    choices: tuple | None = None  # values the release's argparse accepts (None: any)


@dataclass(frozen=True)
class VllmFlags:
    """A knob under every release: its ``Flag`` where the release has one, else the reason it has none.
    ``pykv_only`` (why no release has it) and ``release`` (the knob *is* the release) stand for all."""

    by_release: dict[str, Flag | str] = field(default_factory=dict)  # profile name -> Flag or why not
    pykv_only: str | None = None
    release: bool = False

    def flag_in(self, profile_name: str) -> Flag | None:
        entry = self.by_release.get(profile_name)
        return entry if isinstance(entry, Flag) else None

    def missing_in(self, profile_name: str) -> str | None:
        entry = self.by_release.get(profile_name)
        return entry if isinstance(entry, str) else None

    def covers(self, profile_names: tuple[str, ...]) -> bool:
        return self.release or self.pykv_only is not None or set(self.by_release) == set(profile_names)


PROFILE_NAMES: tuple[str, ...] = tuple(PROFILES)
# Where --kv-offloading-size works, said the same way everywhere (help, notes, the cheat sheet, the sweep).
OFFLOADING_RELEASES = "vLLM 0.11.1+: 0.11.1 to 0.12 also need --kv-offloading-backend native, 0.33 the size alone"


def same_flag(flag: str, kwarg: str, style: Style = "value") -> VllmFlags:
    """The same flag in every release."""
    return VllmFlags({name: Flag(flag, kwarg, style) for name in PROFILE_NAMES})


def per_release(by_profile: dict[str, Flag | str]) -> VllmFlags:
    """The flag, or why there is none, in each profile's release (profile name -> entry): every profile of the
    table must be there (``read_knobs`` refuses the knob otherwise)."""
    return VllmFlags(dict(by_profile))


def pykv_only(why: str) -> VllmFlags:
    return VllmFlags(pykv_only=why)


def the_release() -> VllmFlags:
    return VllmFlags(release=True)
