"""Issue 50 #7, #17 and the X-Forwarded-For half of #1: the app's guard on its HTTP server (server_guard.py), on a
real uvicorn server in a thread, and once on `streamlit run app.py` itself."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
import uvicorn

from pykv.ui.session import server_guard
from testkit.streamlit_server import free_port, start_streamlit, stop, wait_healthy


async def echo_client(scope, receive, send):
    """An ASGI app that answers with the client address it was given."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = f"{scope['client'][0]} {scope['scheme']}".encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]}
    )
    await send({"type": "http.response.body", "body": body})


class Served:
    def __init__(self, environ: dict, guarded: bool = True):
        self.port = free_port()
        self.config = uvicorn.Config(echo_client, host="127.0.0.1", port=self.port, log_level="error", http="h11")
        self.said = server_guard.guard_config(self.config, environ) if guarded else None
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def get(self, path: str = "/", headers: dict | None = None, timeout: float = 5.0) -> str:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers or {})
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.read().decode()


def half_open(port: int) -> socket.socket:
    """A connection that sends a request line and stops."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET / HTTP/1.1\r\n")
    return s


def closed(s: socket.socket, within_s: float) -> bool:
    s.settimeout(within_s)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:  # reset: closed too
        return True


def test_a_request_that_stops_before_its_headers_end_is_closed():
    with Served({server_guard.HEADER_TIMEOUT_ENV: "1"}) as served:
        idle = half_open(served.port)
        assert closed(idle, within_s=5)
        assert served.get() == "127.0.0.1 http"  # a whole request is answered


def test_without_the_guard_a_half_open_connection_is_held():
    """The hole: uvicorn holds it for ever (its keep-alive timer runs only between requests)."""
    with Served({}, guarded=False) as served:
        idle = half_open(served.port)
        assert not closed(idle, within_s=3)
        idle.close()


def test_idle_connections_past_the_cap_make_room_for_a_real_request():
    with Served({server_guard.MAX_CONNECTIONS_ENV: "16", server_guard.HEADER_TIMEOUT_ENV: "60"}) as served:
        assert served.said and served.said.startswith("16 connections")
        idle = [half_open(served.port) for _ in range(40)]
        start = time.monotonic()
        assert served.get() == "127.0.0.1 http"  # the oldest idle ones were closed to let it in
        assert time.monotonic() - start < 3
        assert sum(closed(s, within_s=0.2) for s in idle) >= 40 - 16
        for s in idle:
            s.close()


def test_x_forwarded_for_from_loopback_is_not_an_address():
    spoofed = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}
    with Served({}) as served:
        assert served.get(headers=spoofed) == "127.0.0.1 http"
    with Served({"FORWARDED_ALLOW_IPS": "127.0.0.1"}) as served:  # the host names its proxy: trusted again
        assert served.get(headers=spoofed) == "203.0.113.9 https"


def run_apart(coro) -> None:
    """asyncio.run in a thread of its own: a browser test earlier in this worker may leave an event loop running
    in the main thread (Playwright's sync API), where asyncio.run refuses to start."""
    done: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(coro)
        except BaseException as e:  # re-raised in the test's thread
            done.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=30)
    if done:
        raise done[0]


def test_a_proxys_scheme_still_counts_and_streamlit_metrics_are_hidden():
    seen = []

    async def app(scope, receive, send):
        seen.append((scope["path"], scope["scheme"]))

    guard = server_guard.AppGuard(app, environ={})
    sent = []

    async def send(message):
        sent.append(message)

    proxied = {"type": "http", "path": "/x", "client": ("127.0.0.1", 5), "headers": [(b"x-forwarded-proto", b"https")]}
    run_apart(guard(proxied | {"scheme": "http"}, None, send))
    metrics = {"type": "http", "path": "/_stcore/metrics", "client": ("10.0.0.2", 5), "headers": []}
    run_apart(guard(metrics, None, send))
    assert seen == [("/x", "https")] and sent[0]["status"] == 404
    opened = server_guard.AppGuard(app, environ={server_guard.STREAMLIT_METRICS_ENV: "1"})
    run_apart(opened({"type": "http", "path": "/_stcore/metrics", "scheme": "http", "headers": []}, None, send))
    assert seen[-1] == ("/_stcore/metrics", "http")


def test_the_error_log_is_rate_limited():
    now = [0.0]
    limiter = server_guard.RateLimitedLog(window_s=60, per_window=5, clock=lambda: now[0])

    def record() -> logging.LogRecord:
        return logging.LogRecord(
            "asyncio", logging.ERROR, __file__, 1, "socket.accept() out of system resource", (), None
        )

    passed = sum(limiter.filter(record()) for _ in range(10_000))
    assert passed == 5
    now[0] = 61
    last = record()
    assert limiter.filter(last) and "9995 more like this dropped" in last.getMessage()


def test_the_cap_leaves_room_for_the_process_files():
    assert server_guard.connection_cap(1024, {}) == 1024 - server_guard.FD_RESERVE
    assert server_guard.connection_cap(1_000_000, {}) == server_guard.MAX_CONNECTIONS_CEILING
    assert server_guard.connection_cap(1024, {server_guard.MAX_CONNECTIONS_ENV: "100"}) == 100
    assert server_guard.connection_cap(100, {}) == 16


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="counts the server's open files in /proc")
def test_streamlit_run_app_is_guarded(tmp_path):
    """The guard installs itself while uvicorn imports app.py: half-open connections are closed, the cap holds,
    Streamlit's /_stcore/metrics answers 404, and the app's follow route answers at once."""
    port = free_port()
    env = {server_guard.HEADER_TIMEOUT_ENV: "2", server_guard.MAX_CONNECTIONS_ENV: "40"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        proc = start_streamlit("tiny", port)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout_s=180)
        idle = [half_open(port) for _ in range(100)]
        start = time.monotonic()
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=10) as r:
            assert r.read().decode().strip() == "ok"
        assert time.monotonic() - start < 5
        assert all(closed(s, within_s=10) for s in idle)  # evicted, or timed out after 2 s
        fds = len(os.listdir(f"/proc/{proc.pid}/fd"))
        assert fds < 40 + server_guard.FD_RESERVE
        with pytest.raises(urllib.error.HTTPError) as hidden:
            urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=10)
        assert hidden.value.code == 404
        start = time.monotonic()
        with pytest.raises(urllib.error.HTTPError) as unknown:
            urllib.request.urlopen(f"{url}/api/pykv/follow?ticket=ABCDEFGHIJKLMNOP", timeout=20)
        assert unknown.value.code == 404 and time.monotonic() - start < 2
    finally:
        stop(proc)
