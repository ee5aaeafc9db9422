"""The first class poll on a fresh server (issue 50 #8): start `streamlit run app.py`, send the first
``/api/pykv/follow`` request (an unknown ticket) and, 0.2 s later, a health check; how long each took. A health check
held as long as the poll means the poll blocked the event loop, every visitor's. ``--root`` measures another tree.

    python -m bench.bench_first_poll [--root /tmp/before] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.st_server import ROOT, serve


def timed_get(url: str) -> float:
    start = time.monotonic()
    try:
        urllib.request.urlopen(url, timeout=60).read()
    except urllib.error.HTTPError:  # the unknown ticket's 404 is the answer
        pass
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"# app tree {args.root}")
    for round_ in range(args.rounds):
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        with serve(args.root, model="tiny") as server:
            took: dict[str, float] = {}
            follow = f"{server.url}/api/pykv/follow?ticket=ABCDEFGHIJKLMNOP"
            poll = threading.Thread(target=lambda: took.setdefault("poll", timed_get(follow)))
            poll.start()
            time.sleep(0.2)
            took["health"] = timed_get(f"{server.url}/_stcore/health")
            poll.join()
        print(
            f"round {round_ + 1}: first poll answered in {took['poll']:.2f} s, a health check sent 0.2 s later in "
            f"{took['health']:.2f} s (load average: {load})"
        )


if __name__ == "__main__":
    main()
