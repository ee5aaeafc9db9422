"""`streamlit run app.py` on a free loopback port, and Debian's headless Chromium as the browser tests and the
benchmarks launch it (Playwright cannot download browsers here)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout
CHROMIUM = os.environ.get("PYKV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]

LAYOUT_PROBE = "testkit/layout_probe_app.py"  # app.py with its charts as empty boxes: what the fit walks measure


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int, root: Path = ROOT, *extra: str, script: str = "app.py") -> list[str]:
    """`streamlit run app.py` (or another ``script`` of the checkout ``root``), headless on loopback ``port``."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(root / script),
        "--server.headless=true",
        f"--server.port={port}",
        "--server.address=127.0.0.1",
        "--browser.gatherUsageStats=false",
        "--server.fileWatcherType=none",
        "--logger.level=error",
        *extra,
    ]


TEST_ENV = {"PYKV_OPEN_CLASSES": "1"}  # the tests start classes without the passphrase a server makes by default


def start_streamlit(model_path: str | Path, port: int, script: str = "app.py") -> subprocess.Popen:
    env = TEST_ENV | os.environ | {"PYKV_MODEL": str(model_path), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        streamlit_command(port, script=script), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"streamlit did not answer on {url} within {timeout_s} s")


@contextlib.contextmanager
def serve_app(model: str | Path, script: str = "app.py"):
    """`streamlit run app.py` on ``model`` (a checkpoint folder or "tiny") until the block exits; ``script``:
    another main script of the checkout (testkit/layout_probe_app.py: app.py with its charts as empty boxes)."""
    port = free_port()
    proc = start_streamlit(model, port, script)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        stop(proc)
