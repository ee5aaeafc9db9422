"""The `vllm serve` command and `LLM(...)` arguments a review pack prints, per release: the flags each release has,
the ones it lacks, the tier and the swap pool in the units vLLM reads, and every flag checked against the release's
own source where it is unpacked."""

from __future__ import annotations

import re

import pytest

from pykv.border.config import EngineConfig, knob_named, knobs
from pykv.border.vllm_command import OFFLOAD_BLOCK_ALIGNMENT, knob_mappings, llm_kwargs, serve_command
from pykv.border.vllm_flags import PROFILE_NAMES
from pykv.border.vllm_profiles import PROFILES
from testkit.vllm_source import require_vllm_source

RELEASES = {name: p.release for name, p in PROFILES.items()}


# The knob table's vLLM flags, per release (each knob carries its own: pykv.border.vllm_flags).
RELEASE_FLAGS = {p: {k.name: k.vllm.flag_in(p) for k in knobs() if k.vllm.flag_in(p)} for p in PROFILE_NAMES}


NOT_IN_RELEASE = {p: {k.name for k in knobs() if k.vllm.missing_in(p)} for p in PROFILE_NAMES}


PYKV_ONLY = {k.name for k in knobs() if k.vllm.pykv_only}


@pytest.mark.parametrize(
    "profile, has, lacks",
    [
        (
            "v0.6",
            ["--swap-space", "--preemption-mode swap", "--device cuda", "--num-gpu-blocks-override 24"],
            ["--watermark", "--no-enable-prefix-caching", "--device cpu", "async-scheduling"],
        ),
        (
            "v0.10",
            ["--num-gpu-blocks-override 24", "--no-enable-prefix-caching", "--enable-chunked-prefill"],
            ["--swap-space", "--preemption-mode", "--watermark", "--device", "async-scheduling"],
        ),
        (
            "v0.33",
            ["--num-gpu-blocks-override 24", "--watermark 0.05", "--max-num-seqs 8", "--no-async-scheduling"],
            ["--swap-space", "--preemption-mode", "--device", "--kv-offloading"],
        ),
    ],
)
def test_the_vllm_command_follows_the_release(profile, has, lacks):
    extra = {"preemption_mode": "swap", "num_cpu_blocks": 64} if profile == "v0.6" else {}
    extra |= {"watermark": 0.05} if profile == "v0.33" else {}
    config = EngineConfig(vllm_profile=profile, num_gpu_blocks=24, **extra)
    command = serve_command(config, bytes_per_block=32768)
    assert command.startswith("vllm serve pykv/assets/tiny ")
    for words in has:
        assert words in command, (words, command)
    for words in lacks:
        assert words not in command, (words, command)
    status = {m.knob: m.status for m in knob_mappings(config)}
    assert {k for k, s in status.items() if s == "pykv_only"} == PYKV_ONLY
    assert "num_cpu_blocks" in PYKV_ONLY and "swap_copy" in PYKV_ONLY and "attention_backend" in PYKV_ONLY
    assert llm_kwargs(config)["num_gpu_blocks_override"] == 24


def test_v033_is_told_to_schedule_synchronously_as_pykv_models():
    """0.33.0 turns async scheduling on unless told (config/vllm.py VllmConfig); 0.10.2 defaults it off."""
    assert llm_kwargs(EngineConfig(vllm_profile="v0.33"))["async_scheduling"] is False
    assert "async_scheduling" not in llm_kwargs(EngineConfig(vllm_profile="v0.10"))
    assert serve_command(EngineConfig()).endswith(" --no-async-scheduling")
    assert "synchronous scheduler" in EngineConfig().profile.summary  # said where the profile is described
    # BooleanOptionalAction on async_scheduling: --no-async-scheduling
    assert '"--async-scheduling"' in (require_vllm_source("0.33.0") / "vllm" / "engine" / "arg_utils.py").read_text()


@pytest.mark.parametrize("bytes_per_block", [32768, 5000])
def test_the_offloading_tier_in_blocks_becomes_kv_offloading_size(bytes_per_block):
    """vLLM 0.33.0 makes cpu_bytes_to_use // (the block's bytes rounded up to a page) chunks of one block each
    (v1/kv_offload/cpu/spec.py CPUOffloadingSpec); the size alone enables the tier there, no backend flag."""
    config = EngineConfig(vllm_profile="v0.33", num_offload_blocks=64)
    gib = llm_kwargs(config, bytes_per_block=bytes_per_block)["kv_offloading_size"]
    aligned = -(-bytes_per_block // OFFLOAD_BLOCK_ALIGNMENT) * OFFLOAD_BLOCK_ALIGNMENT
    assert int(gib * 2**30) // aligned == 64  # what vLLM 0.33 makes of it: the same 64 blocks
    command = serve_command(config, bytes_per_block=bytes_per_block)
    assert f"--kv-offloading-size {gib!r}" in command and "--kv-offloading-backend" not in command
    row = next(m for m in knob_mappings(config) if m.knob == "kv_offloading_size")
    assert row.status == "unset" and "num_offload_blocks=64" in row.note  # the block's bytes unknown: said so
    assert "--kv-offloading-size 2.0" in serve_command(EngineConfig(kv_offloading_size=2.0))
    assert "--kv-offloading-size" not in serve_command(EngineConfig())


def test_v0_swap_space_comes_from_the_cpu_pool_in_blocks():
    config = EngineConfig(vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=64)
    kwargs = llm_kwargs(config, bytes_per_block=32768)
    assert int(kwargs["swap_space"] * 2**30) // 32768 == 64  # what vLLM 0.6 makes of it: the same 64 blocks
    assert "--enable-chunked-prefill false" in serve_command(config.replace(enable_chunked_prefill=False))
    assert "--enable-prefix-caching" in serve_command(config.replace(enable_prefix_caching=True))
    note = next(m.note for m in knob_mappings(config.replace(block_size=4)) if m.knob == "block_size")
    assert "8, 16, 32" in note  # 0.6.3.post1's --block-size choices: said, not hidden


def test_every_knob_is_classified_for_every_release():
    for name in RELEASE_FLAGS:
        config = EngineConfig(vllm_profile=name)
        assert len(knob_mappings(config)) == len(EngineConfig.model_fields)
        flags = set(RELEASE_FLAGS[name])
        assert not flags & NOT_IN_RELEASE[name] and not flags & PYKV_ONLY


@pytest.mark.parametrize("profile", list(RELEASES))
def test_every_flag_is_in_the_release_source(profile):
    source = (require_vllm_source(RELEASES[profile]) / "vllm" / "engine" / "arg_utils.py").read_text()
    for knob, flag in RELEASE_FLAGS[profile].items():
        assert f'"{flag.flag}"' in source or f"'{flag.flag}'" in source, (profile, flag.flag)
        assert re.search(rf"^\s+{flag.kwarg}\s*:", source, re.M), (profile, flag.kwarg)  # an EngineArgs field
    for knob in NOT_IN_RELEASE[profile]:
        flag = "--" + knob.replace("_", "-")
        if not knob_named(knob).vllm.missing_in(profile).startswith("not in this profile"):  # else it still parses
            assert f'"{flag}"' not in source and f"'{flag}'" not in source, (profile, flag)
