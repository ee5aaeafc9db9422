"""The manual's MkDocs hook (``hooks:`` in mkdocs.yml): fills each ``<!-- pykv:NAME -->`` marker of a page with text
generated from the code, and each ``<!-- pykv:include PATH -->`` with a file of the checkout, so the reference
pages, the course table, the benchmark tables and the guides kept beside their code cannot drift from them. A
marker stands on a line of its own:

    <!-- pykv:cli -->                       the CLI, from its argparse parsers (docs/hooks/cli_page.py)
    <!-- pykv:knobs -->                     EngineConfig's knob table and each knob's flag per vLLM release
    <!-- pykv:include lessons/README.md shift=1 -->   a file, its headings moved down one level

A marker the hook does not know fails the build (``mkdocs build --strict`` runs in CI)."""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]  # the checkout: docs/hooks/manual.py
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout's pykv, bench and docs.hooks, whatever the venv holds

from mkdocs.exceptions import PluginError  # noqa: E402

# Imported now: MkDocs puts sys.path back as it was once the hook is loaded, so a later import would miss the checkout
from bench import gpu_model_validation as validation  # noqa: E402
from docs.hooks import cli_page, results_page, table_pages  # noqa: E402

MARKER = re.compile(r"^<!-- pykv:([a-z-]+)((?: [^ >]+)*) -->$", re.M)  # a line of its own (not a mention)
EXAMPLE_LOG = "pykv/bridge/examples/v1-0.33-preemption-storm.log"
EXAMPLE_METRICS = "pykv/bridge/examples/v1-0.33-preemption-storm.metrics"  # what counts its preemptions


def _cli() -> str:
    return cli_page.markdown()


def _benchmarks() -> str:
    return results_page.results_markdown(ROOT)


def _gpu_model_validation() -> str:
    notes = [line for line in validation.summary() + validation.figure_19a() if line.strip()]
    return "\n".join(validation.table(True)) + "\n\n```text\n" + "\n".join(notes) + "\n```"


def _diagnose_json() -> str:
    from pykv.bridge import diagnose

    body = diagnose([str(ROOT / EXAMPLE_LOG), str(ROOT / EXAMPLE_METRICS)]).to_json_dict()
    shown = 2
    kept = len(body["samples"])
    body["samples"] = body["samples"][:shown]
    text = json.dumps(body, indent=2)
    return f"```json\n{text}\n```\n\n(The first {shown} of its {kept} samples shown.)"


def _oracle() -> str:
    from pykv.border.oracle_coverage import oracle_markdown

    return oracle_markdown()


def _tables(name: str) -> Callable[[], str]:
    def make() -> str:
        return getattr(table_pages, f"{name}_markdown")()

    return make


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": _cli,
    "knobs": _tables("knobs"),
    "metrics": _tables("metrics"),
    "profiles": _tables("profiles"),
    "course": _tables("course"),
    "oracle": _oracle,
    "benchmarks": _benchmarks,
    "gpu-model-validation": _gpu_model_validation,
    "diagnose-json": _diagnose_json,
}


@functools.cache
def generated(name: str) -> str:
    if name not in GENERATORS:
        raise PluginError(f"unknown marker <!-- pykv:{name} -->: known are {', '.join(GENERATORS)} and include")
    return GENERATORS[name]()


def include(args: str) -> str:
    """A file of the checkout, its headings moved down ``shift`` levels (``shift=1``: its title becomes a section)."""
    words = args.split()
    path, options = ROOT / words[0], dict(w.split("=", 1) for w in words[1:])
    if not path.is_file():
        raise PluginError(f"<!-- pykv:include {words[0]} -->: no such file in the checkout")
    text, shift, fence = path.read_text(), int(options.get("shift", "0")), ""
    lines = []
    for line in text.splitlines():
        opened = re.match(r"^(`{3,}|~{3,})", line)
        if opened and (not fence or opened.group(1).startswith(fence) and line.strip() == opened.group(1)):
            fence = "" if fence else opened.group(1)
        elif not fence and shift and re.match(r"^#{1,5} ", line):
            line = "#" * shift + line
        lines.append(line)
    return "\n".join(lines)


def expand(markdown: str) -> str:
    def fill(match: re.Match) -> str:
        name, args = match.group(1), match.group(2).strip()
        return include(args) if name == "include" else generated(name)

    return MARKER.sub(fill, markdown)


def on_pre_build(config) -> None:
    generated.cache_clear()  # `mkdocs serve` rebuilds: read the code again


def on_page_markdown(markdown: str, page, config, files) -> str:
    return expand(markdown)
