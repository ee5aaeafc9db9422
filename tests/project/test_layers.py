"""The layer contracts in pyproject.toml: every package of pykv sits in a layer, an upward import fails (inside
the split packages too), and a module dropped into a container in no layer fails."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def test_every_package_of_pykv_is_in_a_layer():
    layered = {name.strip() for layer in contracts()["layers"]["layers"] for name in layer.replace("|", ":").split(":")}
    packages = {f"pykv.{p.name}" for p in (ROOT / "pykv").iterdir() if (p / "__init__.py").exists()}
    modules = {f"pykv.{p.stem}" for p in (ROOT / "pykv").glob("*.py")} - {"pykv.__init__", "pykv.__main__"}
    assert not modules, f"modules at pykv's top level belong to no layer: move them into a layer's package: {modules}"
    assert packages <= layered, f"packages in no layer of pyproject.toml's 'layers' contract: {packages - layered}"


def test_every_contract_over_a_container_is_exhaustive():
    """A module put straight into a container (``pykv/engine/new.py``) must fail, not sit in no layer."""
    lax = [
        c["id"]
        for c in contracts().values()
        if c["type"] == "layers" and c.get("containers") and not c.get("exhaustive")
    ]
    assert not lax, f"layers contracts over containers without `exhaustive = true`: {lax}"


def lint_copy(tmp_path: Path, module: str, text: str) -> subprocess.CompletedProcess:
    """lint-imports on a copy of the tree where ``module`` (a path under the root) got ``text`` appended."""
    for name in ("pykv", "pykv_kernels", "oracle", "testkit"):  # the root packages the contracts name
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.safetensors"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / module, "a") as f:
        f.write(text)
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )


def broken_contracts(stdout: str) -> list[str]:
    """The names of the contracts lint-imports' summary marks BROKEN (it wraps a long name over lines)."""
    summary = stdout.split("Analyzed", 1)[1].split("Contracts:", 1)[0]
    summary = " ".join(summary.splitlines()[2:])
    return [name.strip() for name, verdict in re.findall(r"(.+?) (KEPT|BROKEN)\b", summary) if verdict == "BROKEN"]


@pytest.mark.parametrize(
    "module, bad_import, contract",
    [
        ("pykv/border/preemption_choices.py", "from pykv.engine.llm_engine import LLMEngine", "pykv top to bottom"),
        ("pykv/engine/kv/block_pool.py", "from pykv.engine.sched import scheduler", "inside the engine"),
        ("pykv/ui/pages/playground.py", "from pykv.ui.pages import lessons", "pages never import pages"),
        ("pykv/viz/blocks.py", "import streamlit", "pykv.viz draws data"),
        # inside each split package: a lower sub-package importing a higher one, and two independent siblings
        ("pykv/ui/views/widgets/metric_row.py", "from pykv.ui.views.panels import sidebar", "inside the views"),
        ("pykv/ui/views/panels/lesson_text.py", "from pykv.ui.views.players import live_views", "inside the views"),
        ("pykv/lessons/format/schema.py", "from pykv.lessons.values import paths", "inside the lessons"),
        ("pykv/lessons/course/workshop.py", "from pykv.lessons.run import player", "inside the lessons"),
        ("pykv/bridge/base/records.py", "from pykv.bridge.logs import parser", "inside the bridge"),
        ("pykv/bridge/metrics/scrapes.py", "from pykv.bridge.traces import rows", "inside the bridge"),
        # the checkout's helpers: never imported by the product, pykv reached by the oracle in one module only
        ("pykv/lab/lab.py", "from testkit import streamlit_server", "the product (pykv, pykv_kernels) never imports"),
        ("oracle/tier.py", "from pykv.engine.kv import block_pool", "oracle: only oracle.pykv_side imports pykv"),
        ("oracle/trace.py", "from oracle import pykv_side", "oracle: the drivers run in vLLM's venvs"),
        ("testkit/streamlit_server.py", "from pykv.ui import safe_text", "testkit: the server, browser"),
    ],
)
def test_an_upward_import_breaks_a_contract(tmp_path, module, bad_import, contract):
    run = lint_copy(tmp_path, module, f"\n{bad_import}  # noqa\n")
    assert run.returncode == 1, run.stdout + run.stderr
    assert any(name.startswith(contract) for name in broken_contracts(run.stdout)), run.stdout


@pytest.mark.parametrize(
    "container, contract",
    [
        ("engine", "inside the engine"),
        ("lab", "inside the lab"),
        ("ui", "inside the UI"),
        ("ui/views", "inside the views"),
        ("lessons", "inside the lessons"),
        ("bridge", "inside the bridge"),
    ],
)
def test_a_new_module_in_no_layer_breaks_its_container_contract(tmp_path, container, contract):
    module = f"pykv/{container}/stray.py"
    run = lint_copy(tmp_path, module, '"""A module dropped straight into the container, in no layer."""\n')
    assert run.returncode == 1, run.stdout + run.stderr
    assert [name for name in broken_contracts(run.stdout) if name.startswith(contract)], run.stdout
    assert "not listed as layers" in run.stdout, run.stdout
    assert f"pykv.{container.replace('/', '.')}.stray" in run.stdout, run.stdout


def test_the_tree_as_it_is_keeps_every_contract():
    run = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]


RUFF = Path(sys.executable).parent / "ruff"


@pytest.mark.parametrize(
    "bad_import",
    ["from pykv import LLMEngine", "from pykv import EngineConfig", "from pykv.lessons import LessonPlayer"],
)
def test_a_lazy_import_inside_pykv_is_refused(tmp_path, bad_import):
    """`from pykv import X` resolves through importlib, where lint-imports cannot see it: ruff's banned-api refuses it
    inside pykv (and only there: tests, benchmarks and users keep the front door)."""
    for where, refused in (("pykv/lab/probe.py", True), ("tests/probe.py", False)):
        (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / where).write_text(f"{bad_import}\n\nprint({bad_import.split()[-1]})\n")
        shutil.copy(ROOT / "pyproject.toml", tmp_path)
        run = subprocess.run(
            [str(RUFF), "check", "--no-cache", "--select", "TID251", where],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert (run.returncode == 1 and "TID251" in run.stdout) is refused, (where, run.stdout + run.stderr)
