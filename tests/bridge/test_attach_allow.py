"""The page's attach allow-list (the operator's setting, never a visitor's) and the bounds of an attach's window."""

from __future__ import annotations

import pytest

from pykv.bridge import BridgeInputError
from pykv.bridge.live.allow import AllowList
from pykv.bridge.live.window import HEAD_LINES, TAIL_LINES, LiveWindow
from pykv.bridge.metrics.scrapes import Scrape


def test_the_environment_and_the_secrets_entry_make_one_list(monkeypatch):
    monkeypatch.setenv("PYKV_ATTACH_ALLOW", " http://A.example:8000 ,tcp://10.0.0.5:5557,,not a url")
    allow = AllowList.from_settings(["https://b.example/vllm/metrics", "http://A.example:8000/metrics"])
    assert allow.metrics == ("http://A.example:8000/metrics", "https://b.example/vllm/metrics")
    assert allow.kv_events == ("tcp://10.0.0.5:5557",) and allow.rejected == ("not a url",)
    monkeypatch.delenv("PYKV_ATTACH_ALLOW")
    assert AllowList.from_settings(None).empty and AllowList.from_settings("http://c:1").metrics == (
        "http://c:1/metrics",
    )


def test_only_the_allowed_origin_and_path_pass():
    allow = AllowList.parse("http://vllm.internal:8000,tcp://vllm.internal:5557")
    assert allow.check_metrics("http://VLLM.internal:8000") == "http://VLLM.internal:8000/metrics"
    assert allow.check_metrics("http://vllm.internal:8000/metrics") == "http://vllm.internal:8000/metrics"
    for other in (
        "http://vllm.internal:8001",  # another port
        "https://vllm.internal:8000",  # another scheme
        "http://vllm.internal:8000/admin",  # another path
        "http://vllm.internal:8000/metrics?x=1",
        "http://user@evil.example:8000",
        "http://169.254.169.254/latest/meta-data",
        "file:///etc/passwd",
        "",
    ):
        with pytest.raises(BridgeInputError, match="not on this server's attach allow-list"):
            allow.check_metrics(other)
    assert allow.check_kv_events(" tcp://vllm.internal:5557 ") == "tcp://vllm.internal:5557"
    with pytest.raises(BridgeInputError, match="not on this server's attach allow-list"):
        allow.check_kv_events("tcp://vllm.internal:5558")


def test_an_empty_list_allows_nothing():
    with pytest.raises(BridgeInputError, match="no address is allowed"):
        AllowList.parse("").check_metrics("http://127.0.0.1:8000")


def test_the_window_keeps_the_logs_start_up_and_its_recent_lines():
    window = LiveWindow()
    window.add_log_lines([f"line {i}" for i in range(HEAD_LINES + TAIL_LINES + 500)])
    assert window.log_lines == HEAD_LINES + TAIL_LINES + 500
    assert window.log_head[0] == "line 0" and len(window.log_head) == HEAD_LINES
    assert len(window.log_tail) == TAIL_LINES and window.log_tail[0] == f"line {HEAD_LINES + 500}"


def test_a_counter_reset_by_a_restart_counts_from_zero():
    window = LiveWindow()
    for number, value in enumerate((100.0, 130.0, 5.0, 9.0), 1):  # the server restarted between 130 and 5
        scrape = Scrape(number, float(number))
        scrape.add("vllm:num_preemptions_total", {}, value)
        window.add_scrape(scrape)
    assert window.preemption_counter() == (30 + 5 + 4, 9)
    assert LiveWindow().preemption_counter() == (None, None)
