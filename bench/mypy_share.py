"""The share of the product's lines that mypy checks: ``python bench/mypy_share.py`` from the repository root.

The product is the ``.py`` files of ``pykv/`` and ``pykv_kernels/``, counted in physical lines. A file is checked
when it lies in (or is) an entry of ``[tool.mypy] files`` in pyproject.toml and no ``exclude`` pattern matches it or
a folder above it (mypy's own rule: each pattern is a regular expression searched in the path, with ``/``
separators, a folder's path ending in ``/``). Prints, e.g.::

    mypy checks 21,034 of 25,410 product lines (82.8%)
    not checked: pykv/ui 4,376 lines
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path, PurePosixPath

import tomllib

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("pykv", "pykv_kernels")


def mypy_settings(pyproject: Path) -> tuple[list[str], list[re.Pattern[str]]]:
    """``files`` (as written, without a trailing ``/``) and the compiled ``exclude`` patterns of ``[tool.mypy]``."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("mypy", {})
    files = config.get("files", [])
    if isinstance(files, str):  # the ini style: one comma-separated string
        files = [f.strip() for f in files.split(",")]
    exclude = config.get("exclude", [])
    if isinstance(exclude, str):  # one pattern (maybe a multi-line (?x) one)
        exclude = [exclude]
    return [f.strip().rstrip("/") for f in files if f.strip()], [re.compile(p) for p in exclude]


def is_checked(path: PurePosixPath, files: list[str], exclude: list[re.Pattern[str]]) -> bool:
    """Whether mypy, run with these settings from the root, checks the file at ``path`` (relative to the root)."""
    listed = any(str(path) == f or str(path).startswith(f + "/") for f in files)
    folders = [f"{parent}/" for parent in path.parents if str(parent) != "."]
    return listed and not any(p.search(str(path)) or any(p.search(d) for d in folders) for p in exclude)


def physical_lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def main() -> None:
    files, exclude = mypy_settings(ROOT / "pyproject.toml")
    checked, total = 0, 0
    left_out: Counter[str] = Counter()  # package (pykv/ui) -> its lines mypy does not check
    for package in PRODUCT:
        for source in sorted((ROOT / package).rglob("*.py")):
            path = PurePosixPath(source.relative_to(ROOT).as_posix())
            lines = physical_lines(source)
            total += lines
            if is_checked(path, files, exclude):
                checked += lines
            else:
                left_out[str(PurePosixPath(*path.parent.parts[:2]))] += lines  # by package: pykv/ui
    share = 100 * checked / total if total else 0.0
    print(f"mypy checks {checked:,} of {total:,} product lines ({share:.1f}%)")
    for folder, lines in sorted(left_out.items()):
        print(f"not checked: {folder} {lines:,} lines")


if __name__ == "__main__":
    main()
