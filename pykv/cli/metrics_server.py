"""``--serve-metrics PORT``: the engine's Prometheus metrics over HTTP while a run goes (and ``--linger`` seconds
after), so a Prometheus or Grafana can scrape a lab run as it would a vLLM server's ``/metrics``."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Iterator

from prometheus_client import CollectorRegistry, start_http_server

from pykv.cli.errors import UsageError

MAX_LINGER_S = 3600


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
        server, thread = start_http_server(port, addr=host, registry=registry)
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
