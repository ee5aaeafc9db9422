"""`pip install .` ships the product only: pykv and pykv_kernels, never the checkout's test helpers (testkit), the
oracle or the benchmarks, which stay importable in the checkout (pytest's pythonpath, `python -m bench.<name>`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_only_the_product(tmp_path):
    source = tmp_path / "checkout"  # a copy: setuptools writes build/ and *.egg-info beside the sources
    for name in ("pykv", "pykv_kernels", "oracle", "testkit", "bench"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "results"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = tmp_path.glob("pykv-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"pykv", "pykv_kernels"}, top
    assert "pykv/assets/tiny/model.safetensors" in names  # the shipped model travels with the package
    assert "pykv/ui/icon.svg" in names  # and the page icon (no page asks a font host for one)
