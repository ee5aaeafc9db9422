"""Issue 50 #7: `run --serve-metrics` held one thread per connection for ever; 478 idle connections kept new scrapes
out. Now: idle connections are closed, the threads are bounded, and a scrape is answered whatever else is open."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

from prometheus_client import CollectorRegistry, Counter

from pykv.cli import metrics_server
from pykv.cli.metrics_server import MAX_CONNECTIONS, serving_metrics
from testkit.streamlit_server import free_port


def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("pykv_test_scrapes", "a counter to scrape", registry=reg).inc()
    return reg


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return answer.read().decode()


def test_idle_connections_neither_pile_up_threads_nor_keep_scrapes_out(monkeypatch):
    monkeypatch.setattr(metrics_server, "HEADER_TIMEOUT_S", 2.0)
    port, threads_before = free_port(), threading.active_count()
    with serving_metrics(registry(), port):
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(500)]
        time.sleep(0.5)
        assert threading.active_count() - threads_before <= MAX_CONNECTIONS + 2
        start = time.monotonic()
        assert "pykv_test_scrapes_total 1.0" in scrape(port)
        assert time.monotonic() - start < 2
        for s in idle[-MAX_CONNECTIONS:]:  # the ones still open are closed once their request is late
            s.settimeout(6)
            assert s.recv(1) == b""
        for s in idle:
            s.close()


def test_a_slow_scraper_still_gets_its_answer():
    port = free_port()
    with serving_metrics(registry(), port):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        for part in (b"GET /metrics HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n"):
            s.sendall(part)
            time.sleep(0.3)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.0 200") and b"pykv_test_scrapes_total" in answer
