"""Verdict 9 on the Your server page and the Playground (AppTest): the page shows the settings it read ("not read"
where absent), a single scrape as a table of values, each what-if fix at the server's scale, the target model taken
from the log; the replay's link carries its workload, and the Playground opened on that link alone (a fresh
session) runs the very same replay, with the way back to the diagnosis."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from app_helpers import APP, diagnosed, ok, opened, shown_step
from streamlit.testing.v1 import AppTest

EXAMPLE = Path(__file__).parents[2] / "pykv" / "bridge" / "examples" / "v1-0.33-preemption-storm.log"
ONE_SCRAPE = b"""# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 64.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 23.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.987
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} 4821.0
"""


@pytest.fixture
def server(server_app) -> AppTest:
    return server_app


def table(app: AppTest, first_column: str) -> dict[str, str]:
    frame = next(d.value for d in app.dataframe if list(d.value.columns)[0] == first_column)
    return dict(zip(frame.iloc[:, 0], frame.iloc[:, 1]))


def shown(elements) -> str:
    """The elements' text as a person reads it (Markdown's escapes removed)."""
    return "\n".join(re.sub(r"\\(.)", r"\1", e.value) for e in elements)


def test_the_settings_read_and_each_fix_at_the_servers_scale(server):
    ok(server.run())
    ok(server.selectbox(key="server_example").select(EXAMPLE.name).run())
    read = table(server, "setting")
    assert read["--model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert read["--max-num-seqs"] == "128" and read["--gpu-memory-utilization"] == "0.9"
    assert read["--swap-space"] == "not read" and read["--enable-prefix-caching"] == "not read"
    assert read["KV cache size (tokens)"] == "180,000"
    said = shown(server.markdown)
    assert "**In the lab**: half the running batch (--max-num-seqs 12 -> 6)" in said
    assert "**On your server**: your --max-num-seqs 128 -> about 64" in said
    assert "**On your server**: your 11,250 GPU blocks -> about" in said and "GiB of Llama-3.1-8B KV per GPU" in said
    assert server.selectbox(key="server_target_model").value == "llama-3.1-8b"
    assert "The log names meta-llama/Llama-3.1-8B-Instruct: priced as Llama-3.1-8B." in shown(server.caption)


def test_the_model_the_log_names_becomes_the_target(server):
    text = EXAMPLE.read_text().replace("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-14B-Instruct")
    diagnosed(server, text)
    assert server.selectbox(key="server_target_model").value == "qwen2.5-14b"  # priced on Llama-3.1-8B before
    assert "GiB of Qwen2.5-14B KV per GPU" in shown(server.markdown)
    assert "modelled on H100-SXM + Qwen2.5-14B" in shown(server.markdown)


def test_a_single_scrape_is_a_table_of_values_not_a_timeline(server):
    diagnosed(server, ONE_SCRAPE.decode())
    point = table(server, "figure")
    assert (point["running"], point["waiting"], point["GPU KV cache usage"]) == ("64", "23", "98.7%")
    assert not server.get("plotly_chart")  # no timeline of one dot


def test_the_replay_link_opens_the_same_replay_in_a_fresh_session(server, random_llama_path, monkeypatch):
    ok(server.run())
    ok(server.selectbox(key="server_example").select(EXAMPLE.name).run())
    link = next(c.value for c in server.code if "replay=" in c.value)
    params = dict(parse_qsl(urlsplit(link).query))
    assert params["preset"] == "none" and params["step"] == "0"
    plan_workload = server.session_state["replay_link"][1] if "replay_link" in server.session_state else None
    assert plan_workload is None  # nothing opened yet: the link alone must carry the workload
    params["step"] = "5"
    fresh = AppTest.from_file(APP, default_timeout=180)  # another session: nothing but the link
    opened(fresh, **params)
    assert shown_step(fresh) == 5
    lab = fresh.session_state["lab"]
    assert lab.preset is None and len(lab.workload.requests) == 19  # the storm's 12 running + 7 waiting
    assert fresh.query_params["replay"] in ([params["replay"]], params["replay"])  # the address bar keeps it
    assert "A replay of a real server's pressure: 19 requests" in shown(fresh.info)
    assert "**Step 5** · workload `server-replay` ·" in shown(fresh.markdown)  # not "preset none"
    from pykv.bridge import diagnose
    from pykv.lab.server_replay import plan_replay

    planned = plan_replay(diagnose(str(EXAMPLE)), lab.loaded.config.vocab_size)
    assert lab.workload.model_dump() == planned.workload.model_dump()  # the same requests, token for token
    assert lab.config.num_gpu_blocks == planned.config.num_gpu_blocks


def test_a_damaged_replay_link_is_a_warning_and_the_preset(random_llama_path, monkeypatch):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    fresh = AppTest.from_file(APP, default_timeout=180)
    opened(fresh, preset="burst", replay="eNqrVipTsjLUUSp")  # cut short in a chat message
    assert "the link's replay is damaged or not a pykv replay" in shown(fresh.warning)
    assert fresh.session_state["lab"].preset == "burst" and "replay" not in fresh.query_params
