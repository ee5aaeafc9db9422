"""Issue 50, hole 13: a hostile Prometheus (on 127.0.0.1, started here). One deadline over every query, a cap on an
answer's size, no redirect off the given origin, and every failure one `error:` line with exit 2."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from pykv.bridge import fetch_range
from pykv.cli.main import main

GOOD = json.dumps(
    {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": {"__name__": "x"}, "values": [[1000.0, "4"]]}]},
    }
).encode()


class RawServer:
    """A TCP server on 127.0.0.1 answering every connection with ``answer(conn)`` (what a test scripts)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)  # the request (small, one packet on loopback)
            self.answer(conn, self)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def serve():
    servers: list[RawServer] = []

    def start(answer) -> RawServer:
        servers.append(RawServer(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def head(status: str = "200 OK", length: int | None = None, extra: str = "") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{size}{extra}Connection: close\r\n\r\n".encode()


def drip(conn, server) -> None:
    conn.sendall(head())
    while not server.stop.is_set():  # a byte every 0.5 s: each read succeeds, the answer never ends
        conn.sendall(b" ")
        time.sleep(0.5)


def test_a_dripping_server_is_cut_off_at_one_deadline_over_every_query(serve):
    server = serve(drip)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="deadline of 2 s") as info:
        fetch_range(server.url, last="1h", now=2000.0, deadline_s=2.0, timeout_s=1.0)
    assert time.monotonic() - t0 < 6 and "\n" not in str(info.value)


def test_a_dripping_header_is_cut_off_too(serve):
    def slow_head(conn, server):
        for byte in head():
            if server.stop.is_set():
                return
            conn.sendall(bytes([byte]))
            time.sleep(0.3)

    server = serve(slow_head)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="deadline"):
        fetch_range(server.url, last="1h", now=2000.0, deadline_s=1.5, timeout_s=1.0)
    assert time.monotonic() - t0 < 5


def test_an_answer_over_the_cap_is_refused_whether_declared_or_not(serve):
    declared = serve(lambda conn, _: conn.sendall(head(length=60 * 2**20)))
    with pytest.raises(ValueError, match="over the cap"):
        fetch_range(declared.url, now=2000.0, max_bytes=2**20)

    def undeclared(conn, _):
        conn.sendall(head())
        for _ in range(40):
            conn.sendall(b" " * 65536)

    streamed = serve(undeclared)
    with pytest.raises(ValueError, match="over the cap"):
        fetch_range(streamed.url, now=2000.0, max_bytes=2**20)


@pytest.mark.parametrize("where", ["other_port", "other_scheme", "other_host"])
def test_a_redirect_off_the_origin_is_not_followed(serve, where):
    target = serve(lambda conn, _: conn.sendall(head(length=len(GOOD)) + GOOD))
    location = {
        "other_port": f"{target.url}/api/v1/query_range",
        "other_scheme": "https://127.0.0.1/api/v1/query_range",
        "other_host": "http://example.invalid/api/v1/query_range",
    }[where]
    redirect = serve(lambda conn, _: conn.sendall(head("302 Found", 0, f"Location: {location}\r\n")))
    with pytest.raises(ValueError, match="another origin"):
        fetch_range(redirect.url, now=2000.0)


def test_a_redirect_on_the_origin_is_followed(serve):
    def answer(conn, server):
        if not hasattr(server, "moved"):
            server.moved = True
            conn.sendall(head("301 Moved", 0, "Location: /prometheus/api/v1/query_range?x=1\r\n"))
        else:
            conn.sendall(head(length=len(GOOD)) + GOOD)

    server = serve(answer)
    fetch_range(server.url, now=2000.0)  # no error: the redirect stayed on 127.0.0.1 and its port


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda c, _: c.sendall(head(length=10_000) + b'{"status": "succ'), "cut short"),
        (lambda c, _: c.sendall(head() + b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
        (lambda c, _: c.sendall(head() + b"<html>not json</html>"), "not JSON"),
        (lambda c, _: c.sendall(b"garbage\r\n\r\n"), "no answer"),
        (
            lambda c, _: c.sendall(
                head("400 Bad Request") + b'{"status":"error","error":"bad \\u001b]8;;http://x\\u0007"}'
            ),
            "refused the query",
        ),
    ],
)
def test_a_broken_answer_is_one_line(serve, answer, words, capsys):
    server = serve(answer)
    with pytest.raises(ValueError, match=words) as info:
        fetch_range(server.url, now=2000.0)
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value) and "\x07" not in str(info.value)
    assert main(["diagnose", "--prometheus", server.url]) == 2  # the CLI: one line, exit 2, nothing raw
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "\x1b" not in err[0] and "\x07" not in err[0]


def test_a_redirect_to_a_port_out_of_range_is_one_line(serve, capsys):
    redirect = serve(lambda conn, _: conn.sendall(head("302 Found", 0, "Location: http://127.0.0.1:99999/\r\n")))
    assert main(["diagnose", "--prometheus", redirect.url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another origin" in err[0]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:99999",  # OverflowError in the socket layer, once
        "http://127.0.0.1:-1",
        "http://[::1",
        "http://",
        "http://127.0.0.1:9/a b\x00c",  # InvalidURL: control characters in the path
        "ftp://127.0.0.1:9090",
    ],
)
def test_an_unusable_url_is_one_error_line_and_exit_2(url, capsys):
    assert main(["diagnose", "--prometheus", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0]


def test_the_cli_exits_2_on_a_dripping_server_within_its_deadline(serve, monkeypatch, capsys):
    from pykv.bridge.metrics import prometheus_range

    monkeypatch.setattr(prometheus_range, "DEADLINE_S", 2.0)
    server = serve(drip)
    t0 = time.monotonic()
    assert main(["diagnose", "--prometheus", server.url]) == 2
    assert time.monotonic() - t0 < 8
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "deadline" in err[0]
