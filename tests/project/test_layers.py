"""The layer contracts in pyproject.toml: every package of pykv sits in a layer, and an upward import fails."""

from __future__ import annotations

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


@pytest.mark.parametrize(
    "module, bad_import, contract",
    [
        ("pykv/border/preemption_choices.py", "from pykv.engine.llm_engine import LLMEngine", "pykv top to bottom"),
        ("pykv/engine/kv/block_pool.py", "from pykv.engine.sched import scheduler", "inside the engine"),
        ("pykv/ui/pages/playground.py", "from pykv.ui.pages import lessons", "pages never import pages"),
        ("pykv/viz/blocks.py", "import streamlit", "pykv.viz draws data"),
    ],
)
def test_an_upward_import_breaks_a_contract(tmp_path, module, bad_import, contract):
    for name in ("pykv", "pykv_kernels"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.safetensors"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / module, "a") as f:
        f.write(f"\n{bad_import}  # noqa\n")
    run = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 1, run.stdout + run.stderr
    broken = [line for line in run.stdout.replace("\n-", " -").splitlines() if "BROKEN" in line]
    assert any(contract in line for line in run.stdout.split("BROKEN")[0:-1]), run.stdout
    assert broken


def test_the_tree_as_it_is_keeps_every_contract():
    run = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]
