"""A `streamlit run app.py` server for the websocket load tests, and its CPU / RSS read from /proc.

The launch is the browser tests' (tests/e2e/conftest.py: ``free_port``, ``wait_healthy``, the same flags)
with two additions: the app tree can be another checkout (``root``: e.g. ``git archive HEAD`` unpacked, to
measure the committed app while the working tree is being edited), and the server's stderr goes to a file
(a pipe nobody reads would block a chatty server). ``model=None`` leaves PYKV_MODEL unset: the shipped
default model. The server reads ``root/.streamlit/config.toml`` (its cwd).

    with serve(ROOT) as server:            # server.url, server.pid, server.cpu_s(), server.rss_mb()
        ...
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from testkit.streamlit_server import TEST_ENV, free_port, stop, streamlit_command, wait_healthy

ROOT = Path(__file__).resolve().parent.parent

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime of the process (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu_s(self) -> float:
        return cpu_s(self.pid)

    def rss_mb(self) -> float:
        return rss_mb(self.pid)

    def log_tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:]


@contextlib.contextmanager
def serve(root: Path = ROOT, model: str | None = None, extra: tuple[str, ...] = ()) -> Iterator[Server]:
    """Start the app in ``root`` on a free loopback port, wait for its health check, stop it at the end."""
    port = free_port()
    env = TEST_ENV | {k: v for k, v in os.environ.items() if k != "PYKV_MODEL"} | {"PYTHONPATH": str(root)}
    if model:
        env["PYKV_MODEL"] = model
    log = Path(tempfile.mkstemp(prefix="st_server_", suffix=".log")[1])
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            streamlit_command(port, root, *extra), cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=err
        )
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    try:
        try:
            wait_healthy(server.url, proc, timeout_s=120.0)
        except RuntimeError as e:
            raise RuntimeError(f"{e}\n{server.log_tail()}") from None
        yield server
    finally:
        stop(proc)


class Sampler:
    """Server CPU (cores used) and RSS sampled every ``every_s`` in the background (call ``stop()``)."""

    def __init__(self, server: Server, every_s: float = 1.0) -> None:
        import threading

        self.server, self.every_s, self.samples = server, every_s, []  # (t, cpu_s, rss_mb)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self.server.cpu_s(), self.server.rss_mb()))
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak_rss_mb(self, t0: float = 0.0, t1: float = float("inf")) -> float:
        return max((rss for t, _, rss in self.samples if t0 <= t <= t1), default=float("nan"))


def tree_label(root: Path) -> str:
    """The served tree: its git commit (and whether it has edits), or the commit a `git archive` was made of."""
    git = ["git", "-C", str(root)]
    if (root / ".git").exists():
        rev = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "app.py", "pykv", "lessons"], capture_output=True, text=True
        ).stdout.strip()
        return f"{root} at {rev}" + (" + uncommitted edits" if dirty else "")
    stamp = root / ".archived_from"  # written by hand: git archive <rev> | tar -x; echo <rev> > .archived_from
    return f"{root} (git archive of {stamp.read_text().strip()})" if stamp.exists() else str(root)


def append_result(path: Path, root: Path, out: str, note: str = "") -> None:
    """Append ``out`` to a results file under the command line that made it, the date, the served tree and the
    machine's load average when the run ended (1, 5 and 15 minutes: a load figure holds for that load only)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with open(path, "a") as f:
        f.write(
            f"$ python {shlex.join(sys.argv)}\n# {time.strftime('%Y-%m-%d %H:%M')} · app tree: "
            f"{tree_label(root)} · shipped model · {len(os.sched_getaffinity(0))} cores shared by server and "
            f"clients · load average {load} (1/5/15 min) at the end{note}\n"
        )
        f.write(out + "\n\n")
