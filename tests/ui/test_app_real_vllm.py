"""The Playground's "vLLM itself" panel (AppTest, on the shipped model the real engine runs): a trace already on
disk shows at once on a deep link, step by step, with the agreement banner; a divergence names its step and goes
there; a run that is not cached runs from the button (here a stand-in for the worker) or fails in one line; a
config the engine cannot run says why and offers the nearest one it runs; without the engine, the install line.

The real engine is never run here: its recorded run of the same Lab (tests/fixtures/real_vllm/burst.json.gz) is
written into a cache of the test's own, under the key of the case the panel builds."""

from __future__ import annotations

import json

import pytest
from app_helpers import APP, ok, shown_step
from real_vllm_fixtures import BURST_QUERY, burst_lab, load
from streamlit.testing.v1 import AppTest

from pykv.lab.lab_requests import lab_run
from pykv.real_vllm import case, install, runner

RUN = "playground_real_vllm_run"


@pytest.fixture
def recorded(tmp_path, monkeypatch) -> dict:
    """The engine "installed" in a cache of the test's own; returns the burst Lab's case and its recorded trace."""
    monkeypatch.setenv("PYKV_VLLM_CACHE", str(tmp_path))
    monkeypatch.delenv("PYKV_MODEL", raising=False)  # the shipped model: the one the real engine runs
    monkeypatch.setattr(install, "is_installed", lambda: True)
    run = lab_run(burst_lab())
    made = case.case_for(run.config, run.requests, run.max_model_len)
    fixture = load("burst")
    assert made == fixture["case"] | {"name": case.CASE_NAME}  # the Lab builds the very case vLLM ran
    return {"case": made, "trace": fixture["trace"]}


def cache_trace(recorded: dict, trace: dict | None = None) -> None:
    runner.traces_dir().mkdir(parents=True, exist_ok=True)
    runner._store(runner.cache_key([recorded["case"]], detail=True), [trace or recorded["trace"]])


def app(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for name, value in params.items():
        at.query_params[name] = value
    return ok(at.run())


def success(at: AppTest) -> str:
    return " ".join(s.value for s in at.success)


def test_a_cached_run_shows_at_once_on_a_deep_link_and_follows_the_steps(recorded):
    cache_trace(recorded)
    at = app(**BURST_QUERY, step="6")
    assert shown_step(at) == 6 and not [b for b in at.button if b.key == RUN]
    assert "pykv and vLLM agree on every step so far (steps 1–6" in success(at)
    assert any(m.value == "**Step 6 in vLLM**" for m in at.markdown)
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in at.get("plotly_chart")]
    assert any(t.startswith("vLLM's KV pool · ") for t in titles)  # the real engine's pool, drawn
    tables = next(d.value for d in at.dataframe if "vLLM's block table" in d.value.columns)
    assert set(tables["same"]) == {"✓"}  # the same physical blocks, in the same order, in both engines
    ok(at.button(key="step").click().run())
    assert shown_step(at) == 7 and "(steps 1–7" in success(at)
    assert not at.error


def test_step_zero_says_what_there_is_to_compare(recorded):
    cache_trace(recorded)
    at = app(**BURST_QUERY)
    assert any("vLLM ran this workload in 74 steps" in c.value for c in at.caption)


def test_a_divergence_names_its_step_and_what_differs_and_goes_there(recorded):
    trace = dict(recorded["trace"])
    steps = [dict(s) for s in trace["steps"]]
    steps[3] = steps[3] | {"free_blocks": 99}
    cache_trace(recorded, trace | {"steps": steps})
    at = app(**BURST_QUERY, step="8")
    warning = next(w.value for w in at.warning if "differ" in w.value)
    assert "pykv and vLLM differ from step 4" in warning and "free blocks" in warning and "vLLM 99" in warning
    ok(at.button(key="playground_real_vllm_goto").click().run())
    assert shown_step(at) == 4


def test_an_uncached_run_runs_from_the_button(recorded, monkeypatch):
    said: list[str] = []

    def stand_in(cases, model_dir, detail, progress, limits):
        assert cases == [recorded["case"]] and detail and model_dir == str(case.shipped_model_dir())
        for message in ("importing vLLM", "playground: building the engine", "playground: step 25"):
            progress(message)
            said.append(message)
        return [recorded["trace"]]

    monkeypatch.setattr(runner, "run_cases", stand_in)
    at = app(**BURST_QUERY, step="3")
    assert not at.success
    ok(at.button(key=RUN).click().run())
    assert len(said) == 3 and "(steps 1–3" in success(at)


def test_a_failed_run_is_one_line_and_no_traceback(recorded, monkeypatch):
    def failing(*args, **kwargs):
        raise runner.RealEngineUnavailable("The real engine's driver failed (exit 1):\nTraceback ...\nKeyError: 'x'")

    monkeypatch.setattr(runner, "run_cases", failing)
    at = app(**BURST_QUERY, step="2")
    ok(at.button(key=RUN).click().run())
    assert [e.value for e in at.error] == ["The real engine's driver failed (exit 1):"]
    assert not at.exception


def test_a_config_it_cannot_run_says_why_and_offers_the_nearest_one_it_runs(recorded):
    at = app(preset="burst")  # the defaults: 16-token blocks, profile v0.33
    reason = next(i.value for i in at.info if "multiple of 32" in i.value)
    assert "block_size=16: choose 32 or 64" in reason
    fix = next(b for b in at.button if b.key == "playground_real_vllm_runnable")
    assert "vllm_profile v0.32" in fix.label and "block_size 32" in fix.label and "num_gpu_blocks 32" in fix.label
    ok(fix.click().run())
    config = at.session_state["lab"].config
    assert (config.vllm_profile, config.block_size, config.num_gpu_blocks) == ("v0.32", 32, 32)
    assert not any("multiple of 32" in i.value for i in at.info)


def test_a_newer_profile_runs_with_its_caveat(recorded):
    at = app(**BURST_QUERY | {"vllm_profile": "v0.33"})
    caveat = next(w.value for w in at.warning if "pykv follows vLLM 0.33.0" in w.value)
    assert "scan_past_self_preemption" in caveat
    assert [b for b in at.button if b.key == RUN]  # it may run: another case (another profile), not cached


def test_without_the_engine_the_panel_gives_the_install_command(recorded, monkeypatch):
    monkeypatch.setattr(install, "is_installed", lambda: False)
    at = app(**BURST_QUERY)
    assert any(i.value == install.missing_line() for i in at.info)
    assert not [b for b in at.button if b.key == RUN]


def test_the_cached_trace_is_read_once_per_case(recorded, monkeypatch):
    cache_trace(recorded)
    at = app(**BURST_QUERY, step="2")
    reads: list[int] = []
    real_cached = runner.cached_by_key
    monkeypatch.setattr(runner, "cached_by_key", lambda *a, **k: reads.append(1) or real_cached(*a, **k))
    for _ in range(3):
        ok(at.button(key="step").click().run())
    assert shown_step(at) == 5 and reads == []  # kept in the session with its case


def test_a_run_cached_by_another_session_shows_on_the_next_rerun(recorded):
    at = app(**BURST_QUERY, step="2")
    assert [b for b in at.button if b.key == RUN] and not at.success
    cache_trace(recorded)  # another session ran the same case meanwhile
    ok(at.button(key="step").click().run())
    assert "(steps 1–3" in success(at) and not [b for b in at.button if b.key == RUN]


def test_another_model_is_one_line_why(random_llama_path, monkeypatch):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    at = app(**BURST_QUERY)
    reason = next(i.value for i in at.info if "shipped model only" in i.value)
    assert str(random_llama_path) in reason and "on its shipped model" in reason
    assert not [b for b in at.button if b.key in (RUN, "playground_real_vllm_runnable")]
