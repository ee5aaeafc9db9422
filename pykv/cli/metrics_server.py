"""``--serve-metrics PORT``: the engine's Prometheus metrics over HTTP while a run goes (and ``--linger`` seconds
after), so a Prometheus or Grafana can scrape a lab run as it would a vLLM server's ``/metrics``.

prometheus_client's own server starts one thread per connection and waits for ever on a connection that sends
nothing: 478 idle connections kept new scrapes out. This one holds at most MAX_CONNECTIONS at once, gives a
request HEADER_TIMEOUT_S to arrive, and when it is full closes the oldest connection still waiting for its request
to let a new one in (a scrape is answered in milliseconds, so the waiting ones are the idle ones)::

    accept ──> over MAX_CONNECTIONS? close the oldest waiting one (none waiting: refuse this one)
           ──> a thread: the request within HEADER_TIMEOUT_S (else closed) ──> GET /metrics ──> close
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from pykv.cli.errors import UsageError

MAX_LINGER_S = 3600
MAX_CONNECTIONS = 32  # open at once (a Prometheus, a Grafana and a few curls need a handful)
HEADER_TIMEOUT_S = 5.0  # a request's line and headers, from the connection's start


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer
    protocol_version = "HTTP/1.0"  # one request per connection: nothing waits between requests

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(HEADER_TIMEOUT_S)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.answering(self.connection)
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404, "only /metrics is served here")
            return
        body = generate_latest(self.server.registry)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass  # a scrape every few seconds is not news


class MetricsServer(ThreadingHTTPServer):
    """``registry`` over HTTP within the bounds of the module's docstring."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], registry: CollectorRegistry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._open: OrderedDict[socket.socket, bool] = OrderedDict()  # connection -> answering (False: waiting)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:
        with self._lock:
            if len(self._open) >= MAX_CONNECTIONS:
                oldest = next((c for c, answering in self._open.items() if not answering), None)
                if oldest is None:
                    self.shutdown_request(request)
                    return
                self._open.pop(oldest)
                with contextlib.suppress(OSError):
                    oldest.shutdown(socket.SHUT_RDWR)  # its thread's read returns; it closes the socket
            self._open[request] = False
        super().process_request(request, client_address)

    def answering(self, connection: socket.socket) -> None:
        with self._lock:
            if connection in self._open:
                self._open[connection] = True

    def shutdown_request(self, request) -> None:
        with self._lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._open)


def start_metrics_server(registry: CollectorRegistry, port: int, host: str) -> tuple[MetricsServer, threading.Thread]:
    server = MetricsServer((host, port), registry)
    thread = threading.Thread(target=server.serve_forever, name="pykv-metrics", daemon=True)
    thread.start()
    return server, thread


@contextlib.contextmanager
def serving_metrics(
    registry: CollectorRegistry, port: int | None, host: str = "127.0.0.1", linger_s: float = 0.0
) -> Iterator[None]:
    if port is None:
        yield
        return
    if not 1 <= port <= 65535 or not 0 <= linger_s <= MAX_LINGER_S:
        raise UsageError(f"--serve-metrics takes a port 1-65535 and --linger 0-{MAX_LINGER_S} seconds")
    try:
        server, thread = start_metrics_server(registry, port, host)
    except OSError as e:
        raise UsageError(f"cannot serve metrics on {host}:{port}: {e.strerror or e}; pick another port") from None
    print(f"serving the engine's metrics on http://{host}:{port}/metrics", file=sys.stderr)
    try:
        yield
        if linger_s:
            print(f"still serving /metrics for {linger_s:g} s", file=sys.stderr)
            time.sleep(linger_s)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
