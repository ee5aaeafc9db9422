"""Build the oracle's vLLM venvs: one per release, each with only what its scheduler modules import.

    python oracle/build_venvs.py [--releases 0.33.0 0.32.0 0.10.2 0.6.3.post1] [--cache DIR] [--force]

Where: ``--cache``, else ``$PYKV_ORACLE_CACHE``, else ``~/.cache/pykv-oracle`` (outside the clone). Layout::

    <cache>/torch-2.13.0/        CPU torch and its dependencies, installed once (pip --target)
    <cache>/vllm-<release>/      a venv: vllm --no-deps, the pure-Python packages its scheduler imports, and
                                 a .pth file that puts the shared torch on its path
    <cache>/vllm-<release>/.pykv-oracle-ok   the marker: written last, once the scheduler imports

Idempotent: a venv whose marker exists and whose scheduler module is found is skipped. Each release's wheel
pins another torch (0.33.0: 2.14, 0.10.2: 2.8, 0.6.3.post1: 2.4); the scheduler code runs on 2.13 CPU. vLLM's
compiled extensions are not needed: 0.33.0 and 0.10.2 warn that ``_C`` failed to load; 0.6.3.post1's ``.so``
files link the CUDA torch 2.4.0 it was built for, and with ``vllm/_core_C.abi3.so`` present ``import
vllm.config`` fails (``Tried to instantiate class '_core_C.ScalarType'``), so they are moved aside into
``<venv>/vllm-so-moved/`` and vLLM falls back to its pure-Python ScalarType.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

TORCH = "torch==2.13.0"
RELEASES = ("0.33.0", "0.32.0", "0.10.2", "0.6.3.post1")
MARKER = ".pykv-oracle-ok"

# What each release's scheduler modules import (found by importing them in a bare venv, one missing module at a
# time). The version specifiers come from the wheel's own Requires-Dist where it has one; EXTRA_PINS caps what a
# release predates (a newer major version that its code cannot import).
DEPS = {
    "0.33.0": [
        "packaging",
        "pydantic",
        "regex",
        "numpy",
        "cbor2",
        "psutil",
        "pyzmq",
        "urllib3",
        "transformers",
        "aiohttp",
        "requests",
        "openai-harmony",
        "openai",
        "pillow",
        "pybase64",
        "cachetools",
        "msgspec",
        "cloudpickle",
        "uvloop",
        "py-cpuinfo",
        "prometheus-client",
        "xgrammar",
        "fastapi",
        "partial-json-parser",
        "llguidance",
        "einops",
    ],
    "0.10.2": [
        "packaging",
        "pydantic",
        "regex",
        "numpy",
        "cbor2",
        "psutil",
        "pyzmq",
        "transformers",
        "aiohttp",
        "requests",
        "openai",
        "pillow",
        "pybase64",
        "cachetools",
        "msgspec",
        "cloudpickle",
        "py-cpuinfo",
        "prometheus-client",
        "fastapi",
        "partial-json-parser",
        "einops",
        "blake3",
        "gguf",
        "tqdm",
        "pyyaml",
        "sentencepiece",
        "setuptools",
        "setproctitle",
        "openai-harmony",
        "diskcache",
        "compressed-tensors",
    ],
    "0.6.3.post1": [
        "packaging",
        "pydantic",
        "numpy",
        "psutil",
        "pyzmq",
        "transformers",
        "aiohttp",
        "requests",
        "openai",
        "pillow",
        "msgspec",
        "cloudpickle",
        "py-cpuinfo",
        "prometheus-client",
        "fastapi",
        "partial-json-parser",
        "einops",
        "gguf",
        "tqdm",
        "pyyaml",
        "sentencepiece",
        "setuptools",
        "compressed-tensors",
        "mistral-common",
    ],
}
DEPS["0.32.0"] = DEPS["0.33.0"]  # the same scheduler imports (checked when the venv is built)
EXTRA_PINS = {"0.6.3.post1": {"transformers": "<4.47", "numpy": "<2"}, "0.10.2": {"transformers": "<4.57"}}
# An import name -> its distribution, for the discovery loop (a module the lists above missed).
DIST_OF = {
    "yaml": "pyyaml",
    "google": "protobuf",
    "PIL": "pillow",
    "zmq": "pyzmq",
    "cpuinfo": "py-cpuinfo",
    "openai_harmony": "openai-harmony",
    "partial_json_parser": "partial-json-parser",
    "prometheus_client": "prometheus-client",
    "sentencepiece": "sentencepiece",
    "cv2": "opencv-python-headless",
}
SCHEDULER_MODULES = {
    "0.6.3.post1": ["vllm.config", "vllm.core.scheduler", "vllm.sequence"],
    # ModelConfig inspects the architecture by importing its model module (in a subprocess)
    "0.10.2": ["vllm.config", "vllm.v1.core.sched.scheduler", "vllm.v1.outputs", "vllm.model_executor.models.llama"],
    "0.33.0": ["vllm.config", "vllm.v1.core.sched.scheduler", "vllm.v1.outputs", "vllm.model_executor.models.llama"],
    "0.32.0": ["vllm.config", "vllm.v1.core.sched.scheduler", "vllm.v1.outputs", "vllm.model_executor.models.llama"],
}


def default_cache() -> Path:
    return Path(os.environ.get("PYKV_ORACLE_CACHE") or Path.home() / ".cache" / "pykv-oracle")


def venv_dir(release: str, cache: Path | None = None) -> Path:
    return (cache or default_cache()) / f"vllm-{release}"


def venv_python(release: str, cache: Path | None = None) -> Path:
    return venv_dir(release, cache) / "bin" / "python"


def is_ready(release: str, cache: Path | None = None) -> bool:
    """Marker written and the scheduler module's file present (cheap: importing anything of vLLM imports torch,
    10-40 s; the full import was checked before the marker was written)."""
    venv = venv_dir(release, cache)
    if not (venv / MARKER).is_file() or not venv_python(release, cache).exists():
        return False
    module = SCHEDULER_MODULES[release][1].replace(".", "/") + ".py"
    return any((site / module).is_file() for site in (venv / "lib").glob("python3*/site-packages"))


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("  $", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def _pip(python: Path, *args: str, constraints: Path | None = None) -> None:
    extra = ["-c", str(constraints)] if constraints else []
    _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *extra, *args])


def build_torch(cache: Path) -> Path:
    target = cache / TORCH.replace("==", "-")
    if (target / MARKER).is_file():
        print(f"torch: {target} exists, skipped")
        return target
    t0 = time.perf_counter()
    shutil.rmtree(target, ignore_errors=True)
    _pip(Path(sys.executable), "--target", str(target), TORCH)
    (target / MARKER).write_text(TORCH + "\n")
    print(f"torch: installed into {target} in {time.perf_counter() - t0:.0f} s")
    return target


def _requirement_specs(python: Path) -> dict[str, str]:
    """vllm's Requires-Dist (no extras) as name -> specifier, read in the venv."""
    code = (
        "import importlib.metadata as m, json; print(json.dumps([r for r in m.requires('vllm') or [] "
        "if 'extra ==' not in r]))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout
    import json

    specs = {}
    for req in json.loads(out):
        req = req.split(";")[0].strip()
        m = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*\(?([^)]*)\)?", req)
        if m:
            specs[m.group(1).lower().replace("_", "-")] = m.group(3).strip()
    return specs


def _missing_module(python: Path, modules: list[str]) -> str | None:
    code = "import " + ", ".join(modules)
    proc = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=os.environ | {"VLLM_LOGGING_LEVEL": "ERROR"}
    )
    if proc.returncode == 0:
        return None
    found = re.findall(r"No module named '([^'.]+)", proc.stderr)
    if not found:
        raise RuntimeError(f"importing {modules} failed:\n{proc.stderr[-3000:]}")
    return found[-1]


def _spec(dist: str, pins: dict[str, str], specs: dict[str, str]) -> str:
    """``dist`` with this release's cap (EXTRA_PINS) and the wheel's own specifier, comma-joined."""
    parts = [p for p in (pins.get(dist, ""), specs.get(dist, "")) if p]
    return dist + ",".join(parts)


def build_release(release: str, cache: Path, torch_dir: Path, force: bool = False) -> None:
    venv = venv_dir(release, cache)
    if not force and is_ready(release, cache):
        print(f"vllm {release}: {venv} ready, skipped")
        return
    t0 = time.perf_counter()
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "pykv_oracle_torch.pth").write_text(str(torch_dir) + "\n")
    # Nothing may pull in another torch (a CUDA one would shadow the shared CPU torch): pip fails instead.
    constraints = venv / "pykv-oracle-constraints.txt"
    constraints.write_text(TORCH + "\n")
    _pip(python, "--no-deps", f"vllm=={release}")
    specs = _requirement_specs(python)
    pins = EXTRA_PINS.get(release, {})
    _pip(python, *[_spec(d, pins, specs) for d in DEPS[release]], constraints=constraints)
    if release == "0.6.3.post1":
        moved = venv / "vllm-so-moved"
        moved.mkdir(exist_ok=True)
        for so in (site / "vllm").rglob("*.so"):
            shutil.move(str(so), moved / so.name)
    for _ in range(20):  # anything the list missed, one module at a time (printed: fold it into DEPS)
        module = _missing_module(python, SCHEDULER_MODULES[release])
        if module is None:
            break
        dist = DIST_OF.get(module, module).lower().replace("_", "-")
        print(f"vllm {release}: also needs {dist} (module {module}); add it to DEPS", flush=True)
        _pip(python, _spec(dist, pins, specs), constraints=constraints)
    else:
        raise RuntimeError(f"vllm {release}: the scheduler still does not import")
    (venv / MARKER).write_text(f"vllm=={release}\n{TORCH}\n")
    print(f"vllm {release}: built {venv} in {time.perf_counter() - t0:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description="Build the oracle's vLLM venvs (idempotent).")
    ap.add_argument("--releases", nargs="+", default=list(RELEASES), choices=RELEASES)
    ap.add_argument("--cache", type=Path, default=None, help="default: $PYKV_ORACLE_CACHE or ~/.cache/pykv-oracle")
    ap.add_argument("--force", action="store_true", help="rebuild even a venv that is ready")
    ap.add_argument("--du", action="store_true", help="print the cache's disk size at the end")
    ap.add_argument("--jobs", type=int, default=3, help="releases built at once (downloads overlap; default 3)")
    args = ap.parse_args()
    cache = args.cache or default_cache()
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    torch_dir = build_torch(cache)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(build_release, r, cache, torch_dir, args.force) for r in args.releases]
        for future in futures:
            future.result()
    print(f"done in {time.perf_counter() - t0:.0f} s")
    if args.du:
        du = subprocess.run(["du", "-sh", str(cache)], capture_output=True, text=True).stdout.split()[0]
        print(f"{cache} holds {du}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
