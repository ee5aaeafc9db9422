"""The query_range client against a tiny Prometheus stand-in on 127.0.0.1 (started here, nothing else reached)."""

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from pykv.bridge import fetch_range
from pykv.bridge.metrics.prometheus_range import SERIES, parse_duration

SERIES_VALUES = {
    "vllm:num_requests_running": ["4", "5"],
    "vllm:kv_cache_usage_perc": ["0.96", "0.99"],
    "vllm:num_preemptions_total": ["10", "40"],
    "vllm:generation_tokens_total": ["1000", "4000"],
}


class _Handler(BaseHTTPRequestHandler):
    queries: list = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        url = urllib.parse.urlparse(self.path)
        params = urllib.parse.parse_qs(url.query)
        self.queries.append((url.path, params))
        # fetch_range asks for either spelling; a Prometheus scraping OpenMetrics stores vllm:x as vllm_x
        match = re.fullmatch(r'\{__name__=~"vllm\[:_\](.+)"\}', params["query"][0])
        series = "vllm:" + match.group(1).replace("\\", "")
        values = SERIES_VALUES.get(series)
        stored = series.replace("vllm:", "vllm_") if "running" in series or "preemptions" in series else series
        result = (
            []
            if values is None
            else [{"metric": {"__name__": stored, "engine": "0"}, "values": [[1000.0, values[0]], [1015.0, values[1]]]}]
        )
        body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def prometheus():
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    _Handler.queries = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_one_bounded_query_per_series(prometheus):
    result = fetch_range(prometheus, last="2h", now=2000.0)
    assert len(_Handler.queries) == len(SERIES)
    path, params = _Handler.queries[0]
    assert path == "/api/v1/query_range"
    assert float(params["end"][0]) - float(params["start"][0]) == 7200.0
    second = result.samples[1]
    assert (second.running, second.gpu_kv_usage, second.preemptions, second.gen_tps) == (5, 0.99, 30, 200.0)


def test_a_server_started_inside_the_window_counts_its_first_values(prometheus):
    """The series begin at t=1000: a window from t=-5200 saw the server start, so the 10 preemptions of the first
    point happened in it (a run over before Prometheus's first scrape still counts); a window that opens at t=1000
    did not, and its first point's 10 may be from before it."""
    started_inside = fetch_range(prometheus, last="2h", now=2000.0, step_s=15.0)
    assert [s.preemptions for s in started_inside.samples] == [10, 30]
    already_running = fetch_range(prometheus, last="15s", now=1015.0, step_s=15.0)
    assert [s.preemptions for s in already_running.samples] == [None, 30]


def test_unreachable_server_names_the_url():
    with pytest.raises(ValueError, match=r"Prometheus at http://127.0.0.1:9 did not answer") as info:
        fetch_range("http://127.0.0.1:9", last="5m", timeout_s=2)
    assert "\n" not in str(info.value)


def test_durations():
    assert parse_duration("1h30m") == 5400.0 and parse_duration("90s") == 90.0
    with pytest.raises(ValueError, match="write it like"):
        parse_duration("two hours")
