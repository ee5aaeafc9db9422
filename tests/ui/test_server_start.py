"""Issue 50 #6 and #8: the server imports what every session needs before it serves anyone, and the class
follow route imports nothing on the event loop."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from testkit.streamlit_server import ROOT, TEST_ENV


def run(code: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(ROOT)} | TEST_ENV
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_server_imports_the_heavy_modules_and_the_pages_before_serving():
    """Ten tabs opened at once on a fresh server imported numpy and torch in ten script threads; six drew
    "partially initialized module 'numpy'". Importing app.py as the server does now imports them first."""
    out = run(
        """
        import sys
        import app  # what uvicorn does (not __main__): the ASGI app
        wanted = ["numpy", "pandas", "torch", "plotly.graph_objects", "transformers", "pykv.ui.pages.playground",
                  "pykv.ui.pages.lessons", "pykv.ui.pages.server", "pykv.ui.session.classroom"]
        print([m for m in wanted if m not in sys.modules])
        """
    )
    assert out.strip().splitlines()[-1] == "[]"


def test_the_first_follow_poll_imports_nothing():
    """The first /api/pykv/follow request imported the class registry (and with it the lessons and torch) inside
    the async endpoint: ~9 s in which the event loop served nobody."""
    out = run(
        """
        import asyncio, sys, time
        from starlette.requests import Request
        from pykv.ui.session import follow_push

        before = set(sys.modules)
        scope = {"type": "http", "method": "GET", "path": follow_push.PATH, "headers": [],
                 "query_string": b"ticket=ABCDEFGHIJKLMNOP"}
        start = time.perf_counter()
        answer = asyncio.run(follow_push._follow_endpoint(Request(scope)))
        took = time.perf_counter() - start
        new = sorted(m for m in set(sys.modules) - before if m.startswith(("pykv", "torch", "numpy")))
        print(answer.status_code, round(took, 3), new)
        """
    )
    status, took, new = out.strip().splitlines()[-1].split(" ", 2)
    assert status == "404" and new == "[]" and float(took) < 1.0
