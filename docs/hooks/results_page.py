"""The Benchmarks page, read from ``bench/results/``: one section per script, a table of its runs (file, date,
machine, load, command: what each file says of them) and every file's own text. Nothing is copied by hand, so a
number on the page is the number in the file, and a new file appears on the next build.

A results file is free text that its script (or a person) wrote; what it says of its run is found by these rules,
in its first lines: the command (a line starting ``$``, ``# command:`` or ``command``, or a ``python ...`` line),
the date (the file name's, else the first date in it), the machine (the device in the file name, then what the file
says: cores, quiet or shared), the load (``load average``, ``load ~N`` or ``load 1m``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from docs.hooks.markdown import cell, code, table

HEAD_LINES = 8  # what a file says of its run is in its first lines
COMMAND = re.compile(
    r"^[ \t]*(?:#[ \t]*)?"  # a comment's hash
    r"(?:\$[ \t]*|command:?[ \t]+|(?=(?:/usr/bin/time -v |CI=true )?(?:PYKV_\S+ )*python))"  # what starts a command
    r"(.+?)[ \t]*$",
    re.M,
)
SCRIPT = re.compile(r"(?:bench[/.]|^|\s)((?:bench_)?[a-z_]+)\.py|python3? -m bench\.([a-z_]+)|python -m (pykv \w+)")
DATE = re.compile(r"20\d\d-\d\d-\d\d")
LOAD = re.compile(
    r"load average:? ([\d.]+(?:-[\d.]+)?(?:, [\d.]+)*)|load (?:~|avg ~?|at )?([\d.]+(?:-[\d.]+)?)\b(?! ?m\b)"
)
CORES = re.compile(r"\b(\d+)(?:-core| cores| CPUs)\b")
ALIASES = {"pykv_vs_hf": "bench_vs_hf", "structure": "bench_ui", "ci_time": ".ci/run"}  # file name -> script


@dataclass(frozen=True)
class Result:
    path: Path
    script: str
    date: str
    machine: str
    load: str
    command: str

    @property
    def anchor(self) -> str:
        return self.path.stem


def _head(text: str) -> str:
    return "\n".join(text.splitlines()[:HEAD_LINES])


def _command(head: str) -> str:
    for match in COMMAND.finditer(head):
        line = re.split(r"  | \(pykv at| on the CPU", match.group(1))[0].strip()
        if "python" in line:
            return line
    ci = re.search(r"(?:CI=true )?(?:/usr/bin/time -v )?bash(?: -x)? \.ci/run", head)
    return ci.group(0) if ci else ""


def _script(command: str, stem: str, scripts: list[str]) -> str:
    match = SCRIPT.search(command)
    if match:
        name = next(g for g in match.groups() if g)
        if name in scripts or name.startswith("pykv "):
            return name
        if name == "pytest" or "pytest" in command:
            return ".ci/run"
    key = re.sub(r"^\d{4}-\d\d-\d\d-[a-z0-9]+-", "", stem).replace("-", "_")
    if key in ALIASES:
        return ALIASES[key]
    for candidate in sorted(scripts, key=len, reverse=True):
        bare = candidate.removeprefix("bench_")
        if key.startswith(bare) or key.startswith(candidate) or bare.startswith(key):
            return candidate
    return "other"


def _load(head: str) -> str:
    if "load 1m" in head:  # a table whose last column is each row's load, start -> end
        return "; ".join(re.findall(r"([\d.]+ -> [\d.]+)\s*$", head, re.M))
    match = LOAD.search(head)
    return (match.group(1) or match.group(2)).rstrip(".") if match else ""


def _machine(stem: str, head: str) -> str:
    device = re.match(r"\d{4}-\d\d-\d\d-([a-z0-9]+)-", stem)
    parts = [device.group(1).upper() if device else ""]
    cores = CORES.search(head)
    if cores:
        parts.append(f"{cores.group(1)} cores")
    lowered = head.lower()
    if "quiet" in lowered or "calm" in lowered:
        parts.append("quiet")
    elif any(w in lowered for w in ("shared", "other jobs", "other sessions", "other agents")):
        parts.append("shared with other work")
    return ", ".join(p for p in parts if p)


def read_result(path: Path, scripts: list[str]) -> Result:
    text = path.read_text(errors="replace")
    head = _head(text)
    dated = DATE.match(path.name) or DATE.search(text)
    command = _command(head)
    return Result(
        path=path,
        script=_script(command, path.stem, scripts),
        date=dated.group(0) if dated else "",
        machine=_machine(path.stem, head),
        load=_load(head),
        command=command,
    )


def script_summary(path: Path) -> str:
    """A script's docstring, its first sentence."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    sentence = re.split(r"(?<=[.?!:])\s", first, maxsplit=1)[0]
    return sentence.rstrip(":") + ("" if sentence.endswith((".", "?", "!")) else ".")


def results_markdown(root: Path) -> str:
    bench = root / "bench"
    scripts = sorted(p.stem for p in bench.glob("*.py") if p.stem != "__init__")
    results = [read_result(p, scripts) for p in sorted((bench / "results").glob("*.txt"))]
    groups: dict[str, list[Result]] = {}
    for result in results:
        groups.setdefault(result.script, []).append(result)
    out = [
        f"{len(results)} results files from {len(groups)} scripts, newest first in each section.",
        "",
        table(
            ["script", "what it measures", "runs"],
            [
                [f"[{code(name)}](#{_slug(name)})", cell(_summary(bench, name)), str(len(runs))]
                for name, runs in sorted(groups.items())
            ],
        ),
        "",
    ]
    for name, runs in sorted(groups.items()):
        out += [f"## `{name}` {{ #{_slug(name)} }}", "", cell(_summary(bench, name)), ""]
        rows = [
            [
                f"[{code(r.path.name)}](#{r.anchor})",
                r.date,
                cell(r.machine),
                cell(r.load),
                code(r.command) if r.command else "",
            ]
            for r in sorted(runs, key=lambda r: (r.date, r.path.name), reverse=True)
        ]
        out += [table(["file", "date", "machine", "load", "command"], rows), ""]
        for r in sorted(runs, key=lambda r: (r.date, r.path.name), reverse=True):
            body = r.path.read_text(errors="replace").rstrip("\n").replace("\t", "    ")
            out += [
                f"### `{r.path.name}` {{ #{r.anchor} }}",
                "",
                f'??? note "`bench/results/{r.path.name}`: {len(body.splitlines())} lines"',
                "",
                "    ````text",
                *["    " + line if line else "" for line in body.splitlines()],
                "    ````",
                "",
            ]
    return "\n".join(out)


def _slug(name: str) -> str:
    return "script-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _summary(bench: Path, name: str) -> str:
    if name == ".ci/run":
        return "How long CI takes: `.ci/run` from a fresh clone, its phases and its slowest tests."
    if name.startswith("pykv "):
        return f"The command line's `{name.split()[1]}`, run as a user runs it."
    script = bench / f"{name}.py"
    return script_summary(script) if script.exists() else "Results whose script the file does not name."
