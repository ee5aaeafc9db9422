"""The Prometheus round trip against a real Prometheus (Debian's package; .ci/run installs it): a lab run serves
its metrics over HTTP (`python -m pykv run --serve-metrics`), Prometheus scrapes it on loopback, and
`pykv diagnose --prometheus` reads the series back with the same preemption count the engine exported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from pykv.bridge import diagnose, fetch_range
from pykv.bridge.metrics.prometheus_range import series_query
from testkit.streamlit_server import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
pytestmark = pytest.mark.skipif(
    not Path(PROMETHEUS).exists() and not os.environ.get("PYKV_REQUIRE_PROMETHEUS"),
    reason="no prometheus binary (apt-get install prometheus; CI installs it)",
)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_real_prometheus_scrapes_a_lab_run_and_diagnose_reads_it_back(tmp_path):
    lab_port, prom_port = free_port(), free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n"
        f"scrape_configs:\n  - job_name: pykv\n    static_configs:\n      - targets: ['127.0.0.1:{lab_port}']\n"
    )
    prom = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykv",
            "run",
            "--workload",
            "storm",
            "--num-gpu-blocks",
            "12",
            "--num-requests",
            "6",
            "--max-tokens",
            "24",
            "--serve-metrics",
            str(lab_port),
            "--linger",
            "30",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    prom_url = f"http://127.0.0.1:{prom_port}"
    try:
        _wait(lambda: _get(f"{prom_url}/-/ready"), 60, "Prometheus to be ready")
        assert run.stdout is not None
        run.stdout.readline()  # the summary's first line: the run has finished; /metrics stays up (--linger)
        final = _get(f"http://127.0.0.1:{lab_port}/metrics")
        exported = next(
            float(line.split()[-1]) for line in final.splitlines() if line.startswith("vllm:num_preemptions_total")
        )
        assert exported > 0  # storm at 24 blocks preempts

        def scraped_final():
            query = urllib.parse.urlencode({"query": series_query("vllm:num_preemptions_total")})
            body = json.loads(_get(f"{prom_url}/api/v1/query?{query}"))
            values = [float(r["value"][1]) for r in body["data"]["result"]]
            return values and values[0] == exported

        _wait(scraped_final, 30, "Prometheus to scrape the run's final count")
        diagnosis = diagnose([], live_metrics=fetch_range(prom_url, last="10m", step_s=1.0))
        assert diagnosis.preemptions_at_least == exported
        # the usage series is read back (a run over before the first scrape leaves only its idle 0.0)
        assert diagnosis.samples and all(s.gpu_kv_usage is not None for s in diagnosis.samples)
        assert diagnosis.engine == "v1"  # v0.33's metric names
    finally:
        for proc in (run, prom):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
