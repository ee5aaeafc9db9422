"""The CLI reference, read from the argparse parser ``python -m pykv`` itself builds (``pykv.cli.main.build_parser``):
every command, its positionals and flags, their values, defaults and help. The engine flags (one per knob of
``EngineConfig`` exposed to the CLI) are the same in every command that takes them, so they are listed once."""

from __future__ import annotations

import argparse

from docs.hooks.markdown import cell, code, table

SUPPRESSED = (None, argparse.SUPPRESS)


def _subcommands(parser: argparse.ArgumentParser) -> tuple[dict[str, argparse.ArgumentParser], dict[str, str]]:
    """(name -> parser, name -> the one line the command list shows), in the order the CLI adds them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return dict(action.choices), helps
    raise ValueError("the parser has no sub-commands")


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices:
        return " \\| ".join(code(c) for c in action.choices)
    if action.metavar:
        return code(action.metavar)
    kind = getattr(action.type, "__name__", None)
    return code(kind.upper() if kind else action.dest.upper())


def _default(action: argparse.Action) -> str:
    if isinstance(action, argparse.BooleanOptionalAction):
        return code("--" + ("" if action.default else "no-") + action.dest.replace("_", "-"))
    if action.default in SUPPRESSED or isinstance(action, argparse._StoreTrueAction):
        return ""
    return code(action.default)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    if action.required and action.option_strings:
        text = "required. " + text
    return cell(text)


def _rows(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> list[list[str]]:
    rows = []
    for action in actions:
        names = action.option_strings or [action.dest]
        rows.append([" ".join(code(n) for n in names), _value(action), _default(action), _help(parser, action)])
    return rows


def _own_actions(parser: argparse.ArgumentParser, engine_flags: set[str]) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction) and a.dest not in engine_flags and a.help != argparse.SUPPRESS
    ]


def cli_markdown(parser: argparse.ArgumentParser, engine: argparse.ArgumentParser) -> str:
    """The reference: the command list, then each command, then the engine flags once. ``engine`` is a parser with
    the engine flags alone, at the knobs' own defaults (a command that changes a default says so)."""
    engine_actions = [a for a in engine._actions if not isinstance(a, argparse._HelpAction)]
    engine_flags = {a.dest: a.default for a in engine_actions}
    commands, helps = _subcommands(parser)
    prog = parser.prog
    out = [table(["command", "what it does"], [[f"[`{name}`](#{name})", cell(helps[name])] for name in commands]), ""]
    for name, sub in commands.items():
        own = _own_actions(sub, set(engine_flags))
        takes_engine = any(a.dest in engine_flags for a in sub._actions)
        positionals = " ".join(
            a.dest.upper() + ("..." if a.nargs in ("*", "+") else "") for a in own if not a.option_strings
        )
        usage = " ".join(
            p for p in [prog, name, "[engine flags]" if takes_engine else "", "[options]", positionals] if p
        )
        out += [f"## `{name}`", "", cell(helps[name][:1].upper() + helps[name][1:]) + ".", "", f"```\n{usage}\n```", ""]
        if sub.description and name in ("diagnose", "attach"):
            out += ["```text", sub.description.strip(), "```", ""]
        out += [table(["flag", "value", "default", "what"], _rows(sub, own)), ""]
        if takes_engine:
            changed = [
                f"{code('--' + a.dest.replace('_', '-'))} {code(a.default)}"
                for a in sub._actions
                if a.dest in engine_flags and a.default != engine_flags[a.dest]
            ]
            note = f" with these defaults of its own: {', '.join(changed)}" if changed else ""
            out += [f"It also takes every [engine flag](#engine-flags){note}.", ""]
    out += [
        "## Engine flags",
        "",
        "`run`, `sweep`, `report` and `generate` take one flag per knob of `EngineConfig` that the CLI exposes "
        "(`--block-size` for `block_size`), with its type, choices, bounds and help from the knob table: see "
        "[Knobs](knobs.md) for each knob's bounds and its flag in each vLLM release.",
        "",
        table(["flag", "value", "default", "what"], _rows(engine, engine_actions)),
        "",
    ]
    return "\n".join(out)


def markdown() -> str:
    from pykv.cli.main import add_engine_flags, build_parser

    engine = argparse.ArgumentParser(prog="python -m pykv")
    add_engine_flags(engine)
    return cli_markdown(build_parser(), engine)
