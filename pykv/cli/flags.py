"""The flags several commands share: one per engine knob (from EngineConfig's table) and a preset's size."""

from __future__ import annotations

import argparse
from typing import Any

from pykv.border.config import EngineConfig, Knob, knobs
from pykv.border.knob_table import knob_text
from pykv.border.workload import PRESET_ARG_BOUNDS, PRESETS
from pykv.cli.errors import UsageError


def check_preset_flags(args: argparse.Namespace, file_ok: bool) -> dict:
    """``--num-requests`` and ``--max-tokens`` as preset arguments, bounded like the presets' own."""
    given = {}
    for flag, name in (("--num-requests", "n"), ("--max-tokens", "max_tokens")):
        value = getattr(args, "num_requests" if name == "n" else "max_tokens")
        if value is None:
            continue
        low, high = PRESET_ARG_BOUNDS[name]
        if not low <= value <= high:
            raise UsageError(f"{flag} {value} is out of range; use {low} to {high:,}.")
        given[name] = value
    if given and args.workload not in PRESETS and file_ok:
        raise UsageError(
            "--num-requests and --max-tokens size a preset workload; a workload file sets its own "
            "(edit the file instead)."
        )
    return given


def _flag_type(spec: Knob):
    """argparse type for a knob; an Optional one also takes "none"."""
    base = {"int": int, "float": float, "text": str, "choice": str}[spec.kind]
    if not spec.optional:
        return base

    def parse(text: str):
        return None if text.lower() == "none" else base(text)

    parse.__name__ = base.__name__  # argparse names the type in its error message
    return parse


def add_engine_flags(p: argparse.ArgumentParser, **defaults: Any) -> None:
    """One flag per knob exposed to the CLI (``--block-size`` for ``block_size``), from EngineConfig's
    table: type, choices, default and help. ``defaults`` overrides a knob's default for this command."""
    for spec in knobs("cli"):
        flag, default = "--" + spec.name.replace("_", "-"), defaults.get(spec.name, spec.default)
        help_text = f"{spec.help} (default: {knob_text(default)})"
        if spec.kind == "bool":
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=spec.help)
        else:
            p.add_argument(flag, type=_flag_type(spec), default=default, choices=spec.choices or None, help=help_text)


def config_from_args(args: argparse.Namespace) -> EngineConfig:
    return EngineConfig(**{spec.name: getattr(args, spec.name) for spec in knobs("cli")})
