"""EngineConfig is the one table of knobs: the CLI flags, the sidebar widgets, the URL parameters and the
lesson rules are derived from it, and every config error is one line that names the field."""

from __future__ import annotations

import pytest

from pykv.border.config import ConfigError, EngineConfig, knob_named, knobs
from pykv.border.knob_table import parse_knob_text
from pykv.cli.main import build_parser
from pykv.lessons.course.lesson_walk import check_config
from pykv.lessons.format.errors import FieldError


def flags_of(command: str) -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return {s for a in sub._actions for s in a.option_strings}


@pytest.mark.parametrize("command", ["run", "generate", "sweep"])
def test_every_cli_knob_is_a_flag_of_every_command(command):
    flags = flags_of(command)
    for spec in knobs("cli"):
        assert "--" + spec.name.replace("_", "-") in flags, spec.name


def test_cli_flags_carry_the_table_types_choices_and_defaults():
    parser = build_parser()
    args = parser.parse_args(
        [
            "run",
            "--vllm-profile",
            "v0.6",
            "--preemption-mode",
            "swap",
            "--num-cpu-blocks",
            "0",
            "--watermark",
            "0.2",
            "--no-enable-chunked-prefill",
        ]
    )
    assert (args.vllm_profile, args.preemption_mode, args.num_cpu_blocks, args.watermark) == ("v0.6", "swap", 0, 0.2)
    assert args.enable_chunked_prefill is False and args.log_stats_interval == 10  # `run` prints stats lines
    assert parser.parse_args(["generate", "x"]).log_stats_interval is None  # headless: none
    assert parser.parse_args(["run", "--max-model-len", "none"]).max_model_len is None
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--preemption-mode", "pause"])


def test_every_knob_has_help_and_lessons_say_why_not():
    for spec in knobs():
        assert spec.help, spec.name
        assert ("lesson" in spec.expose) != bool(spec.not_in_lessons), spec.name
    assert {k.name for k in knobs() if k.app_owned} == {"model", "device", "dtype", "attention_backend"}


def test_choices_are_the_literal_types():
    assert knob_named("preemption_mode").choices == ("recompute", "swap", "auto")
    assert knob_named("num_cpu_blocks").kind == "int" and knob_named("num_cpu_blocks").optional


def test_num_cpu_blocks_zero_means_a_pool_with_no_room_everywhere():
    spec = knob_named("num_cpu_blocks")
    assert parse_knob_text(spec, "0") == 0 and parse_knob_text(spec, "none") is None
    v0 = {"vllm_profile": "v0.6", "preemption_mode": "swap"}
    assert EngineConfig(**v0, num_cpu_blocks=0).num_cpu_blocks == 0
    assert build_parser().parse_args(["run", "--num-cpu-blocks", "0"]).num_cpu_blocks == 0
    assert check_config({"num_cpu_blocks": 0, **v0}, {}, "config")["num_cpu_blocks"] == 0
    with pytest.raises(ConfigError, match="needs a CPU swap pool"):
        EngineConfig(**v0)  # None: sized from swap_space, which is 0


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"num_gpu_blocks": 0}, "num_gpu_blocks", "positive integer"),
        ({"block_size": True}, "block_size", "must be an integer"),
        ({"max_model_len": 1.5}, "max_model_len", "must be an integer or None"),
        ({"num_cpu_blocks": "3"}, "num_cpu_blocks", "must be an integer or None"),
        ({"swap_space": float("nan")}, "swap_space", "finite"),
        ({"watermark": 1.0}, "watermark", "out of range"),
        ({"vllm_profile": "v1"}, "vllm_profile", "must be one of"),
        ({"vllm_profile": "v0.10", "watermark": 0.1}, "watermark", "not a knob of vllm_profile='v0.10'"),
        ({"preemption_mode": "pause"}, "preemption_mode", "must be one of"),
        ({"blocks": 3}, "blocks", "not an EngineConfig field"),
        ({"device": "tpu"}, "device", "'cpu' or 'cuda'"),
    ],
)
def test_config_errors_are_one_line_and_name_the_field(changes, field, words):
    with pytest.raises(ConfigError, match=words) as e:
        EngineConfig(**changes)
    assert e.value.field == field and "\n" not in str(e.value) and "pydantic" not in str(e.value)


def test_lesson_config_rules_come_from_the_table():
    with pytest.raises(FieldError, match="comes from the app"):
        check_config({"device": "cpu"}, {}, "config")
    with pytest.raises(FieldError, match="unknown EngineConfig field") as e:
        check_config({"blocks": 4}, {}, "config")
    assert e.value.field == "config.blocks"
    with pytest.raises(FieldError) as e:
        check_config({"log_stats_interval": 0}, {}, "config")
    assert e.value.field == "config.log_stats_interval"


def test_replace_validates_like_a_new_config():
    base = EngineConfig(num_gpu_blocks=8)
    assert base.replace(block_size=4) == EngineConfig(num_gpu_blocks=8, block_size=4)
    with pytest.raises(ConfigError, match="block_size"):
        base.replace(block_size=0)


def test_a_knob_without_its_vllm_flags_is_refused_when_the_table_is_read():
    """Each knob says, for every release, its flag or why there is none: a missing release fails at import."""
    from pydantic import BaseModel

    from pykv.border.knob_table import knob, read_knobs
    from pykv.border.vllm_flags import PROFILE_NAMES, Flag, VllmFlags

    class Partial(BaseModel):
        x: int = knob(1, "a knob", vllm=VllmFlags({"v0.6": Flag("--x", "x")}))

    with pytest.raises(TypeError, match="vllm=... for every release"):
        read_knobs(Partial, PROFILE_NAMES)
