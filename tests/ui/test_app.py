"""The Streamlit app through streamlit.testing.v1.AppTest, on a random checkpoint (PYKV_MODEL)."""

from __future__ import annotations

from app_helpers import ADD, APP, narration, ok, open_tab, shown_step
from streamlit.testing.v1 import AppTest

APPLY = "apply"


def test_app_loads_at_step_zero_with_every_view(app):
    ok(app.run())
    assert shown_step(app) == 0 and not app.error
    assert [m.label for m in app.metric][:2] == ["KV usage", "Preemptions"]
    assert {"step", "back", "play", "next_preemption", "run_end", "reset"} <= {b.key for b in app.button}
    assert "nothing has run yet" in narration(app)
    assert app.get("plotly_chart"), "figures are drawn"


def test_step_back_reset_and_next_preemption_change_the_shown_step(app):
    app.query_params["vllm_profile"] = "v0.6"  # V0 writes a warning on the first preemption
    ok(app.run())
    app.button(key="step").click().run()
    app.button(key="step").click().run()
    assert shown_step(ok(app)) == 2 and "Step 2 ran" in narration(app)
    app.button(key="back").click().run()
    assert shown_step(ok(app)) == 1
    app.button(key="next_preemption").click().run()
    step = shown_step(ok(app))
    assert step > 1 and "preempted by recompute" in narration(app)
    assert any("preempted by PreemptionMode.RECOMPUTE" in c.value for c in app.code)  # vLLM 0.6's log line
    assert app.metric[1].value != "0"
    app.button(key="reset").click().run()
    assert shown_step(ok(app)) == 0


def test_valid_config_rebuilds_the_engine(app):
    ok(app.run())
    app.button(key="step").click().run()
    assert "cfg_num_cpu_blocks" not in app.session_state  # today's V1 has no swap: no CPU pool knob
    assert app.button_group(key="cfg_preemption_mode").options == ["recompute"]
    app.button_group(key="cfg_vllm_profile").set_value("v0.6").run()  # the form shows v0.6's knobs at once
    assert app.session_state["lab"].config.vllm_profile == "v0.33"
    assert any("Apply switches the engine to it" in c.value for c in app.caption)
    assert app.button_group(key="cfg_preemption_mode").options == ["recompute", "swap", "auto"]
    app.number_input(key="cfg_num_gpu_blocks").set_value(32)
    app.button_group(key="cfg_preemption_mode").set_value("swap")
    app.button(key=APPLY).click().run()  # one Apply: the release, swap, and a CPU pool to swap into
    ok(app)
    assert not app.error and any("Swap needs a CPU pool" in i.value for i in app.info)
    lab = app.session_state["lab"]
    assert lab.config.num_gpu_blocks == 32 and lab.config.preemption_mode == "swap" and lab.config.num_cpu_blocks == 32
    app.number_input(key="cfg_num_cpu_blocks").set_value(16)
    app.button(key=APPLY).click().run()
    assert ok(app).session_state["lab"].config.num_cpu_blocks == 16
    assert shown_step(app) == 0 and app.query_params["num_gpu_blocks"] in ("32", ["32"])
    assert app.query_params["vllm_profile"] in ("v0.6", ["v0.6"])
    app.button_group(key="cfg_vllm_profile").set_value("v0.33")  # back to V1: swap's knobs go back to defaults
    app.button(key=APPLY).click().run()
    ok(app)
    config = app.session_state["lab"].config
    assert (config.vllm_profile, config.preemption_mode, config.num_cpu_blocks) == ("v0.33", "recompute", None)
    assert any("vllm_profile=v0.33 has no num_cpu_blocks" in i.value.replace("\\", "") for i in app.info)


def test_invalid_config_shows_the_engine_message_and_keeps_the_engine(app):
    ok(app.run())
    app.button(key="step").click().run()
    app.button_group(key="cfg_vllm_profile").set_value("v0.6")
    app.button(key=APPLY).click().run()
    app.button(key="step").click().run()
    before = app.session_state["lab"]
    app.number_input(key="cfg_max_num_seqs").set_value(64)
    app.number_input(key="cfg_max_num_batched_tokens").set_value(32)  # fewer tokens than sequences: refused
    app.button(key=APPLY).click().run()
    ok(app)
    assert any("must be greater than or equal to" in e.value for e in app.error)
    assert app.session_state["lab"] is before and shown_step(app) == 1


def test_deep_link_opens_at_the_given_step(app):
    app.query_params["preset"] = "burst"
    app.query_params["step"] = "5"
    app.query_params["num_gpu_blocks"] = "48"
    ok(app.run())
    assert shown_step(app) == 5 and "Step 5 ran" in narration(app)
    lab = app.session_state["lab"]
    assert lab.preset == "burst" and lab.config.num_gpu_blocks == 48


def test_the_v1_stats_line_on_a_cpu_says_its_pool_is_the_device_pool(app):
    app.query_params["step"] = "10"  # the lab writes vLLM's stats line every 10 steps
    ok(app.run())
    assert any("CPU KV cache usage" in c.value for c in app.code)
    assert any("is the device pool" in c.value and "not V0's CPU swap pool" in c.value for c in app.caption)


def test_bad_deep_link_warns_instead_of_failing(app):
    app.query_params["preset"] = "nope"
    app.query_params["step"] = "x"
    ok(app.run())
    assert shown_step(app) == 0 and len(app.warning) == 2


def test_add_request_by_hand_and_a_bad_one(app):
    ok(app.run())
    app.text_area(key="new_prompt").set_value("def add(a, b):")
    app.button(key=ADD).click().run()
    assert "m1" in app.session_state["lab"].view.queues["waiting"] and not app.error
    app.text_area(key="new_prompt").set_value("")
    app.button(key=ADD).click().run()
    assert any("empty" in e.value for e in ok(app).error)


def test_play_toggles_and_run_to_end_finishes(app):
    ok(app.run())
    app.button(key="play").click().run()
    assert ok(app).session_state["playing"] and app.button(key="pause").label == "Pause"
    assert "play" not in {b.key for b in app.button}
    app.button(key="pause").click().run()
    assert not ok(app).session_state["playing"]
    app.button(key="run_end").click().run()
    assert ok(app).session_state["lab"].at_end() and app.button(key="step").disabled


def test_about_page(random_llama_path, monkeypatch):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))

    def about_page():
        from pykv.ui.pages import about

        about.render()

    at = ok(AppTest.from_function(about_page, default_timeout=30).run())
    text = "\n".join(m.value for m in at.markdown)
    assert "attention backend in use: `torch (paged SDPA)`" in text and "device: `cpu`" in text and not at.error
    # what is proved against vLLM by running it, and how to rerun it
    assert "| `v0.33` | 0.33.0 `vllm.v1.core.sched.scheduler.Scheduler` (V1) | 10 |" in text
    assert "python3 oracle/build_venvs.py" in text and "Outside the oracle" in text


def test_sessions_share_the_weights_but_not_the_engine(app, random_llama_path):
    other = AppTest.from_file(APP, default_timeout=60)
    ok(app.run()), ok(other.run())
    mine, theirs = app.session_state["lab"], other.session_state["lab"]
    assert mine.engine.loaded is theirs.engine.loaded  # st.cache_resource: one copy of the weights
    assert mine.engine is not theirs.engine and mine.engine.kv is not theirs.engine.kv
    app.button(key="step").click().run()
    assert shown_step(app) == 1 and shown_step(ok(other.run())) == 0


def test_about_shows_the_model_card_without_front_matter(random_llama_path, tmp_path, monkeypatch):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(random_llama_path, folder)
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# Tiny card\n\nTrained on code.\n")
    monkeypatch.setenv("PYKV_MODEL", str(folder))

    def about_page():
        from pykv.ui.pages import about

        about.render()

    at = ok(AppTest.from_function(about_page, default_timeout=30).run())
    text = "\n".join(m.value for m in at.markdown)
    assert "# Tiny card" in text and "license: mit" not in text


def test_a_missing_model_is_an_error_message_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("PYKV_MODEL", str(tmp_path / "nowhere"))
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    assert any("is not a folder" in e.value for e in at.error)


def test_sidebar_and_url_are_derived_from_the_config_table(app):
    from pykv.border.config import knobs

    app.query_params["vllm_profile"] = "v0.6"
    app.query_params["num_cpu_blocks"] = "0"  # 0 = a CPU pool with no room, as in the API and the CLI
    app.query_params["max_num_seqs"] = "4"
    ok(app.run())
    lab = app.session_state["lab"]
    assert lab.config.num_cpu_blocks == 0 and lab.config.max_num_seqs == 4
    for spec in knobs("sidebar"):  # every knob v0.6 has
        if spec.profiles is None or "v0.6" in spec.profiles:
            assert f"cfg_{spec.name}" in app.session_state, f"no sidebar widget for {spec.name}"
        else:
            assert f"cfg_{spec.name}" not in app.session_state, f"{spec.name} shown under v0.6, which lacks it"
    assert app.number_input(key="cfg_max_num_seqs").value == 4
    assert app.query_params["num_cpu_blocks"] in ("0", ["0"])  # written back as it was read


def test_url_beyond_the_sidebar_limits_falls_back_to_the_default(app):
    app.query_params["num_gpu_blocks"] = "30000"  # the sidebar stops at 512
    ok(app.run())
    assert app.session_state["lab"].config.num_gpu_blocks == 64
    assert any("num_gpu_blocks" in w.value for w in app.warning)


def test_a_step_draws_only_the_open_detail_tab(app):
    """A Step redraws the block tables (the first tab), not the Requests and Costs tables and the log too: each is
    drawn when its tab opens, and stays open across Steps."""
    ok(app.run())
    ok(app.button(key="step").click().run())
    logged = ("[step ", "(no log lines yet)")  # the Log tab's text
    assert len(app.dataframe) == 0 and not any(c.value.startswith(logged) for c in app.code)
    open_tab(app, "Requests")
    assert [df for df in app.dataframe if "TTFT ms (engine time)" in df.value.columns]
    ok(app.button(key="step").click().run())
    assert shown_step(app) == 2 and [df for df in app.dataframe if "TTFT ms (engine time)" in df.value.columns]
    open_tab(app, "Log (all steps)")
    assert len(app.dataframe) == 0 and any(c.value.startswith(logged) for c in app.code)
