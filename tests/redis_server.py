"""A real, throwaway redis-server for the class-mode tests: one per test module that asks for it, and the
fixtures the Redis tests share (a raw client on an emptied database, two app replicas on it, ``wait_for``).

It listens on a free localhost port, keeps nothing on disk (``--save "" --appendonly no``), and is
killed when the module's tests are done. Tests skip (with the reason) only when the redis-server
binary is missing or the server cannot start; CI installs it (.ci/run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from pykv.classroom import Classes
from pykv.classroom.redis_store import RedisStore
from testkit.streamlit_server import free_port


@pytest.fixture(scope="module")
def redis_url():
    binary = shutil.which("redis-server") or next((p for p in ["/usr/bin/redis-server"] if os.path.exists(p)), None)
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        log = os.path.join(folder, "redis.log")
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                folder,
                "--logfile",
                log,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
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


@pytest.fixture
def raw(redis_url):
    """A plain client on the module's server, its database emptied first."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def replicas(redis_url, raw):
    """Two app replicas (two stores, two Classes) on one Redis."""
    stores = [RedisStore(redis_url), RedisStore(redis_url)]
    yield [Classes(store) for store in stores]
    for store in stores:
        store.close()


def wait_for(predicate, timeout_s: float = 1.0) -> float:
    """Seconds until ``predicate()`` held; fails after ``timeout_s``."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout_s, "not within the time allowed"
        time.sleep(0.005)
    return time.monotonic() - started
