"""Issue 50, hole 5, on the Your server page: hostile numbers and JSON never crash it. The diagnosis, the replay, the
what-if and the baseline each show one line when they cannot do their part, the rest of the page stays, and a kept
diagnosis that cannot be drawn is said once and dropped (it does not fail again on every rerun)."""

from __future__ import annotations

import pytest
from app_helpers import diagnosed, ok
from streamlit.testing.v1 import AppTest

STATS = (
    "INFO 06-16 21:24:{second:02d} metrics.py:341] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: "
    "{gen} tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 90.0%, CPU KV "
    "cache usage: 0.0%.\n"
)
WARNING = (
    "WARNING 06-16 21:24:16 scheduler.py:1057] Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode "
    "because there is not enough KV cache space. total_num_cumulative_preemption={count}\n"
)


def stats(second: int = 15, running: str = "3", gen: str = "2.0") -> str:
    return STATS.format(second=second, running=running, gen=gen)


@pytest.fixture
def app(server_app) -> AppTest:
    return server_app


BIG = "9" * 4290
HOSTILE = {
    "4290-digit blocks": f"INFO 06-16 21:24:10 gpu_executor.py:122] # GPU blocks: {BIG}, # CPU blocks: {BIG}\n"
    "INFO 06-16 21:24:10 gpu_executor.py:126] Maximum concurrency for 2048 tokens per request: 5.00x\n" + stats(),
    "400-digit running": stats(running="9" * 400) + stats(second=25),
    "4000-digit cumulative count": stats() + WARNING.format(count="9" * 4000) + stats(second=45),
    "V0 CPU blocks for 1.48 M lab blocks": "INFO 06-16 21:24:10 gpu_executor.py:122] # GPU blocks: 10, # CPU blocks: "
    "1480000\n" + stats() + WARNING.format(count=1) + stats(second=45),
    "num_gpu_blocks inf": 'vllm:cache_config_info{num_gpu_blocks="inf",block_size="16"} 1.0\n'
    "vllm:num_requests_running 3.0\n",
    "trace timestamps inf and NaN": '{"timestamp": 1e999, "input_length": 10, "output_length": 5}\n'
    '{"timestamp": NaN, "input_length": 10, "output_length": 5}\n'
    '{"timestamp": 5, "input_length": 10, "output_length": 5}\n'
    '{"timestamp": 9, "input_length": 10, "output_length": 5}\n',
    "trace row nested 30,000 deep": '{"timestamp": 1, "input_length": 10, "output_length": 5}\n'
    '{"timestamp": 2, "input_length": 10, "output_length": 5, "x": ' + "[" * 30_000 + "]" * 30_000 + "}\n",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_numbers_and_json_are_diagnosed_and_replayed_without_a_crash(app, text):
    diagnosed(app, text)
    heads = [s.value for s in app.subheader]
    assert heads[0].startswith("Release") and "Replay it in the lab" in heads and "Baseline" in heads, heads
    assert not app.error, [e.value for e in app.error]
    ok(app.run())  # and again: the kept diagnosis draws on every rerun


def test_timestamps_of_1e20_ms_are_one_error(app):
    diagnosed(app, "vllm:num_requests_running 3.0 100000000000000000000\n")
    assert len(app.error) == 1 and "usable time" in app.error[0].value


def test_a_kept_diagnosis_that_cannot_be_drawn_is_said_once_and_dropped(app, monkeypatch):
    from pykv.ui.views.panels import server_report

    diagnosed(app, stats() + stats(second=25))
    monkeypatch.setattr(server_report, "timeline", lambda d: f"{10**5000}")  # ValueError: past int's str limit
    ok(app.run())
    assert len(app.error) == 1 and "cannot be shown" in app.error[0].value
    ok(app.run())
    assert not app.error and not app.subheader  # dropped: the next rerun is the empty page


def test_a_replay_that_fails_is_one_line_and_the_baseline_stays(app, monkeypatch):
    from pykv.ui.views.panels import server_lab

    def broken(d, vocab_size):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(server_lab, "plan_replay", broken)
    diagnosed(app, stats() + stats(second=25))
    assert len(app.error) == 1 and "OverflowError" in app.error[0].value
    assert "Baseline" in [s.value for s in app.subheader]


def test_a_what_if_that_fails_is_one_line(app, monkeypatch):
    from pykv.ui.views.panels import server_what_if

    def broken(*args):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(server_what_if, "what_if", broken)
    diagnosed(app, stats() + WARNING.format(count=51) + stats(second=45, running="60"))
    ok(app.button(key="server_what_if").click().run())
    assert len(app.error) == 1 and "RecursionError" in app.error[0].value
    assert "Baseline" in [s.value for s in app.subheader]
