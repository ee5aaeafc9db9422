"""Run cases through vLLM's real engine in a worker process of its own venv; cache the traces on disk.

A trace depends only on the release, the driver script and the case (knobs, token ids, arrivals): the key is a
hash of the three, so a room opening the same link, or a deep link to any step, reads a file instead of running
vLLM again. One run at a time on a machine (a lock file beside the cache), under a time budget and a memory cap
(the worker's resident memory, polled; it is stopped, and the run refused with a reason, past either).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pykv.real_vllm import install

DRIVER = Path(__file__).resolve().parent / "driver" / "drive_engine.py"
KEEP_TRACES = 400  # the newest cached traces kept; older ones are removed after each run
FORMAT_VERSION = 1


class RealEngineUnavailable(RuntimeError):
    """The real engine cannot run here (not installed), or a run was stopped (time, memory); the message says
    which and what to do."""


@dataclass(frozen=True)
class RunLimits:
    timeout_s: float = 600.0
    memory_gib: float = 6.0  # the worker's resident memory; the tiny model's engine needs about 1.5


def traces_dir() -> Path:
    return install.cache_root() / "traces"


def cache_key(cases: list[dict[str, Any]], detail: bool) -> str:
    blob = json.dumps(
        {
            "release": install.RELEASE,
            "driver": hashlib.sha256(DRIVER.read_bytes()).hexdigest(),
            "cases": cases,
            "detail": detail,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def cached(cases: list[dict[str, Any]], detail: bool) -> list[dict[str, Any]] | None:
    """The traces of these cases if a run of them is on disk, else None."""
    return cached_by_key(cache_key(cases, detail))


def cached_by_key(key: str) -> list[dict[str, Any]] | None:
    """``cached`` by the key (``cache_key``), for a caller that looks again and again: a page on every rerun."""
    path = traces_dir() / f"{key}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())["data"]
    except (OSError, ValueError, KeyError):
        return None


def run_cases(
    cases: list[dict[str, Any]],
    model_dir: str,
    detail: bool = False,
    progress: Callable[[str], None] | None = None,
    limits: RunLimits = RunLimits(),
    fresh: bool = False,
) -> list[dict[str, Any]]:
    """One trace per case (the oracle's trace format plus ``outputs``, ``stats_lines``, ``metrics``,
    ``build_s``, ``step_ms`` and, with ``detail``, each step's block pool and block tables). ``fresh``: run
    the engine even when the traces are cached (the proof in CI), and cache the new ones. ``progress`` gets the
    driver's messages ("importing vLLM", "<case>: building the engine", "<case>: step 25", ...) in the caller's
    thread."""
    if not install.is_installed():
        raise RealEngineUnavailable(install.missing_line())
    hit = None if fresh else cached(cases, detail)
    if hit is not None:
        return hit
    traces_dir().mkdir(parents=True, exist_ok=True)
    with _one_at_a_time(progress):
        hit = None if fresh else cached(cases, detail)  # another process may have run them while this one waited
        if hit is not None:
            return hit
        traces = _run_worker(cases, model_dir, detail, progress, limits)
        _store(cache_key(cases, detail), traces)
    return traces


def progress_share(message: str, expected_steps: int | None = None) -> float:
    """How far a run has got (0..1) from the driver's last message: importing vLLM takes about half of a
    playground-sized run (~10 s), building the engine ~2 s, then ~4 ms a step (``expected_steps``, where known)."""
    if message.startswith("importing"):
        return 0.05
    if message.endswith("building the engine"):
        return 0.55
    step = message.rsplit("step ", 1)[-1]
    if step.isdigit():
        return min(0.98, 0.6 + 0.38 * int(step) / max(expected_steps or 0, int(step) + 25))
    return 0.0


class _one_at_a_time:
    def __init__(self, progress: Callable[[str], None] | None) -> None:
        self._progress = progress
        self._file: TextIO | None = None

    def __enter__(self) -> None:
        self._file = lock = open(install.cache_root() / "run.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if self._progress:
                self._progress("waiting for another run of the real engine on this machine to finish")
            fcntl.flock(lock, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()


def _rss_gib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0  # not Linux, or the process is gone: no cap to enforce


def _run_worker(
    cases: list[dict[str, Any]],
    model_dir: str,
    detail: bool,
    progress: Callable[[str], None] | None,
    limits: RunLimits,
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="pykv-real-vllm-") as work:
        src, dst = Path(work) / "cases.json", Path(work) / "traces.json"
        src.write_text(json.dumps({"format": FORMAT_VERSION, "data": cases}))
        cmd = [str(install.venv_python()), str(DRIVER), str(src), str(dst), "--model-dir", model_dir]
        if detail:
            cmd.append("--detail")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.setdefault("OMP_NUM_THREADS", "1")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        tail: list[str] = []
        said: queue.SimpleQueue[str] = queue.SimpleQueue()
        reader = threading.Thread(target=_read_output, args=(proc, tail, said), daemon=True)
        reader.start()
        started, stopped = time.monotonic(), None
        while proc.poll() is None:
            _pass_on(said, progress)
            if time.monotonic() - started > limits.timeout_s:
                stopped = f"it ran past its time budget ({limits.timeout_s:.0f} s)"
            elif _rss_gib(proc.pid) > limits.memory_gib:
                stopped = f"it used more than {limits.memory_gib:g} GiB of memory"
            if stopped:
                proc.kill()
                proc.wait()
                raise RealEngineUnavailable(f"The real engine was stopped: {stopped}. Try a smaller workload.")
            time.sleep(0.25)
        reader.join(timeout=5)
        _pass_on(said, progress)
        if proc.returncode != 0 or not dst.exists():
            raise RealEngineUnavailable(
                f"The real engine's driver failed (exit {proc.returncode}):\n" + "\n".join(tail[-15:])
            )
        return json.loads(dst.read_text())["data"]


def _pass_on(said: queue.SimpleQueue[str], progress: Callable[[str], None] | None) -> None:
    """Hand the driver's progress messages to ``progress`` in the caller's thread (a Streamlit page updates its
    progress bar from its own thread only)."""
    while not said.empty():
        message = said.get()
        if progress:
            progress(message)


def _read_output(proc: subprocess.Popen, tail: list[str], said: queue.SimpleQueue[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        if line.startswith('{"progress"'):
            said.put(json.loads(line)["progress"])
            continue
        tail.append(line)
        del tail[:-40]


def _store(key: str, traces: list[dict[str, Any]]) -> None:
    path = traces_dir() / f"{key}.json"
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps({"format": FORMAT_VERSION, "data": traces}))
    partial.replace(path)  # atomic: a reader sees the whole file or none
    old = sorted(traces_dir().glob("*.json"), key=lambda p: p.stat().st_mtime)[:-KEEP_TRACES]
    for stale in old:
        stale.unlink(missing_ok=True)
