"""Idle half-open connections against `streamlit run app.py` (issue 50 #7): the server starts with 1,024 open
files (soft limit; the hard one stays), N connections each send a request line and stop, and a visitor then asks for
the health check and a page; how long they wait, how many idle connections the server still holds after 15 s, and
how many bytes its log grew by in 30 s. ``--root`` measures another checkout.

    python -m bench.bench_idle_connections [--connections 1100] [--root /tmp/before]
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import time
import urllib.request
from pathlib import Path

from bench.st_server import ROOT, serve


def ask(url: str, timeout_s: float) -> str:
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            answer.read()
            return f"{answer.status} in {time.monotonic() - start:.2f} s"
    except Exception as e:  # refused, reset, timed out: what a visitor sees
        return f"{type(e).__name__} after {time.monotonic() - start:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1100)
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))  # the server inherits a soft limit of 1,024
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# app tree {args.root}; server's open files 1,024 (soft); load average {load} (1/5/15 min) at the start")
    with serve(args.root, model="tiny") as server:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, args.connections + 256), hard))  # ours only
        port = int(server.url.rsplit(":", 1)[1])
        print(f"before: health {ask(server.url + '/_stcore/health', 10)}")
        idle = []
        for _ in range(args.connections):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GET / HTTP/1.1\r\n")
                idle.append(s)
            except OSError:
                break
        log0 = server.log.stat().st_size
        print(f"{len(idle)} half-open connections sent")
        print(f"with them open: health {ask(server.url + '/_stcore/health', 10)}, page {ask(server.url + '/', 10)}")
        time.sleep(15)
        held = 0
        for s in idle:
            s.settimeout(0.01)
            try:
                held += s.recv(1) != b""
            except TimeoutError:
                held += 1
            except OSError:
                pass
        print(f"after 15 s: {held} still held by the server; health {ask(server.url + '/_stcore/health', 10)}")
        time.sleep(15)
        grown = server.log.stat().st_size - log0
        print(f"server log grew {grown / 1e6:.2f} MB in 30 s")
        for s in idle:
            s.close()


if __name__ == "__main__":
    main()
