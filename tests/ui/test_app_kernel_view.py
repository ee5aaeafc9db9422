"""The Playground's kernel view (AppTest): the launches of a prefill and a decode step on interpreted Triton,
a program's blocks in block-table order, a choice that did not run at the step, and the torch backend's note."""

from __future__ import annotations

import importlib.util

import pytest
from streamlit.testing.v1 import AppTest

from pykv.engine.model.attention import STEPWISE_CPU_ENV
from pykv.ui.views.panels.kernel_view import open_key

if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)


@pytest.fixture
def app(app) -> AppTest:
    """tests/ui/conftest.py's app on interpreted Triton with the burst preset, the kernel view open."""
    app.query_params["attention_backend"] = "triton"
    app.query_params["preset"] = "burst"
    app.session_state[open_key("playground")] = True  # the panel is drawn only while its expander is open
    return app


def ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def program_box(at: AppTest):
    return next(s for s in at.selectbox if s.label == "Program")


def blocks_caption(at: AppTest) -> list[int]:
    caption = next(c.value for c in at.caption if "program" in c.value and "blocks" in c.value)
    return [int(b) for b in caption.split("blocks ")[-1].split(" → ")]


def step_until(at: AppTest, phase: str) -> None:
    for _ in range(12):
        ok(at.button(key="step").click().run())
        if any(o.startswith(phase) for o in program_box(at).options):
            return
    raise AssertionError(f"no {phase} launch within 12 steps")


def test_kernel_view_prefill_and_decode_programs_read_their_block_tables(app):
    ok(app.run())
    assert any("No attention ran" in i.value for i in app.info)  # step 0
    step_until(app, "prefill")
    lab = app.session_state["lab"]
    table = {r.request_id: r.block_table for r in lab.view.requests}
    box = program_box(app)
    assert box.value.startswith("prefill · req ") and any(o.startswith("store · tokens") for o in box.options)
    launches = next(t.value for t in app.table if "blocks from" in t.value.columns)
    assert {"store", "prefill"} <= set(launches["launch"]) and "the kernel's trace" in set(launches["blocks from"])
    rid = box.value.split("req ")[1].split(" ")[0]
    assert blocks_caption(app) == table[rid][: len(blocks_caption(app))] and blocks_caption(app)
    assert app.get("plotly_chart")
    assert any(
        c.value.startswith("The first layer's launches") and "the other layers launched the same kernels" in c.value
        for c in app.caption
    )

    step_until(app, "decode")
    lab = app.session_state["lab"]
    box = program_box(app)
    choice = [o for o in box.options if o.startswith("decode · req ") and o.endswith("KV head 1")][-1]
    assert choice != box.value  # not the default (the first attention program)
    box.select(choice).run()
    ok(app)
    rid = choice.split("req ")[1].split(" ")[0]
    request = next(r for r in lab.view.requests if r.request_id == rid)
    assert blocks_caption(app) == request.block_table  # a decode reads the request's whole table, in order
    assert app.session_state["playground_kernel_choice"] == choice


def test_a_choice_that_did_not_run_at_this_step_is_a_message(app):
    ok(app.run())
    step_until(app, "prefill")
    app.session_state["playground_kernel_choice"] = "decode · req 99 · KV head 0"
    ok(app.run())
    assert any("No program ran decode · req 99 · KV head 0" in w.value for w in app.warning)
    assert program_box(app).value.startswith("prefill")  # the first attention program instead


def test_torch_backend_says_there_are_no_kernel_launches(app):
    app.query_params["attention_backend"] = "torch"
    ok(app.run())
    ok(app.button(key="step").click().run())
    assert any("ran torch (paged SDPA) attention: no Triton kernel launches" in i.value for i in app.info)


def test_the_panel_is_drawn_only_while_its_expander_is_open(app):
    app.session_state[open_key("playground")] = False
    ok(app.run())
    for _ in range(3):
        ok(app.button(key="step").click().run())
    assert [e.label for e in app.expander if "kernels" in e.label] == ["Attention kernels of this step"]
    assert not [s for s in app.selectbox if s.label == "Program"]  # a closed panel costs a click nothing
    app.session_state[open_key("playground")] = True
    ok(app.run())
    assert program_box(app).options


def test_on_auto_the_panel_says_the_other_layers_ran_torch(app, monkeypatch):
    """The lab's CPU default runs the kernels on the first layer only: the panel says so beside its launches."""
    monkeypatch.setenv(STEPWISE_CPU_ENV, "triton")
    app.query_params["attention_backend"] = "auto"
    ok(app.run())
    step_until(app, "prefill")
    assert app.session_state["lab"].engine.backend.later_layers is not None
    assert any(
        c.value.startswith("The first layer's launches")
        and "the other layers ran torch (paged SDPA) attention" in c.value
        for c in app.caption
    )
