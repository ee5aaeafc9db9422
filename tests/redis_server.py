"""A real, throwaway redis-server for the class-mode tests: one per test module that asks for it.

It listens on a free localhost port, keeps nothing on disk (``--save "" --appendonly no``), and is
killed when the module's tests are done. Tests skip (with the reason) only when the redis-server
binary is missing or the server cannot start; CI installs it (.ci/run).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url():
    binary = shutil.which("redis-server") or next((p for p in ["/usr/bin/redis-server"] if os.path.exists(p)), None)
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    port = _free_port()
    with tempfile.TemporaryDirectory() as folder:
        log = os.path.join(folder, "redis.log")
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                 "no", "--dir", folder, "--logfile", log],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url, socket_connect_timeout=0.2)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        proc.kill()
                        proc.wait(10)
                        out = Path(log).read_text(errors="replace")[-500:] if os.path.exists(log) else ""
                        pytest.skip(f"redis-server could not start on port {port}: {out}")
                    time.sleep(0.02)
            yield url
        finally:
            client.close()
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
