"""The Your server page through AppTest: an example log gives the release, findings, a replay and a baseline;
junk is one error and the page stays usable."""

from __future__ import annotations

import json

import pytest
from app_helpers import ok
from streamlit.testing.v1 import AppTest


@pytest.fixture
def app(server_app) -> AppTest:
    return server_app


def test_an_example_log_is_diagnosed_replayed_and_kept_as_a_baseline(app):
    ok(app.run())
    ok(app.selectbox(key="server_example").select("v1-0.33-preemption-storm.log").run())
    heads = [s.value for s in app.subheader]
    assert heads[0].startswith("Release: 0") and "Findings" in heads and "Replay it in the lab" in heads
    assert any("Preemption storm" in e.label for e in app.expander)
    assert app.metric[0].value == "476"  # counted by the /metrics bodies read with the V1 example log
    startup = app.dataframe[1].value  # after the settings read: a fact not printed is a dash; numbers as read
    assert startup.loc[0, "kv_cache_tokens"] == "180,000" and startup.loc[0, "num_cpu_blocks"] == "—"
    ok(app.button(key="server_what_if").click().run())
    table = app.dataframe[-1].value  # the what-if table, last on the page before the baseline's (none yet)
    assert list(table.columns) == ["", "as planned", "fix 1", "fix 2"] and table.iloc[0, 0] == "preemptions"


def test_junk_is_one_error_and_the_previous_diagnosis_stays(app):
    ok(app.run())
    ok(app.selectbox(key="server_example").select("v0-preemption-storm.log").run())
    app.text_area(key="server_paste").input("not a log at all")
    ok(app.button(key="FormSubmitter:server_input-Diagnose").click().run())
    assert len(app.error) == 1 and "found no vLLM stats line" in app.error[0].value
    assert app.subheader[0].value.startswith("Release: V0")  # the example's diagnosis is still shown


def test_a_bad_baseline_upload_is_one_error(app, tmp_path):
    from pykv.bridge.baseline import parse_baseline

    with pytest.raises(ValueError, match="not a number"):
        parse_baseline(json.dumps({"baseline_version": 1, "figures": {"mean_gen_tps": "fast"}}).encode())
    with pytest.raises(ValueError, match="not a bridge baseline"):
        parse_baseline(b'{"figures": 3}')
    with pytest.raises(ValueError, match="small JSON file"):
        parse_baseline(b" " * 2_000_000)


def test_a_data_parallel_log_shows_each_engine_beside_the_total(app):
    """0.10.2 with --data-parallel-size 2: the page's timeline is the total, and each engine's queue and KV usage
    is said in words (the fullest engine holds the whole queue)."""
    from pathlib import Path

    log = Path(__file__).parents[1] / "fixtures" / "bridge" / "v1_0_10_2_dp2.log"
    ok(app.run())
    app.text_area(key="server_paste").input(log.read_text())
    ok(app.button(key="FormSubmitter:server_input-Diagnose").click().run())
    words = "\n".join(t.value for t in app.text)
    assert "engine 0: 6 samples, running up to 48, waiting up to 40, KV usage up to 99.4%" in words
    assert "engine 1: 6 samples, running up to 20, waiting up to 0, KV usage up to 55.0%" in words
