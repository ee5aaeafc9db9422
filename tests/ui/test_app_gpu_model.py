"""The modelled target in the app (AppTest): choosing a target changes the modelled labels and values and
never hides or changes the measured ones; the pool can be sized in GiB of the target's KV; every
modelled number on every page says "modelled" where it names a GPU (the rendered text is checked)."""

from __future__ import annotations

import dataclasses
import json
import re

from app_helpers import details_key, lessons_page, ok, open_tab, sweep_page
from streamlit.testing.v1 import AppTest

from pykv.gpu_model import DEFAULT_TARGET, GPUS
from pykv.ui.views.players.live_views import TABS

POOL = "target_pool_set"
RUN_SWEEP = "FormSubmitter:sweep_form_num_gpu_blocks-Run sweep"
GPU_NAME = re.compile("|".join(re.escape(name) for name in GPUS))
A_COST = re.compile(r"\d\s*(ms|µs|s)\b|tokens/s|TTFT|TPOT|bill|delay|time|clock", re.IGNORECASE)


def modelled_metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric if "modelled" in m.label}


def measured_metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric if "modelled" not in m.label}


def unlabelled_modelled_text(at: AppTest, at_least: int, tabs_prefix: str | None = "") -> list[str]:
    """Rendered text that names a catalogue GPU beside a cost (or a chart's trace or title naming one) but does
    not say it is modelled, on the page with each of its detail tabs open in turn (only the open one is drawn;
    ``tabs_prefix``: the live views' key prefix, None for a page without them). ``at_least``: how many such
    texts the page must show, a text another tab repeats counted once (so the check checks something)."""
    named: list[str] = []
    for k, label in enumerate(TABS.values() if tabs_prefix is not None else [None]):
        if label is not None:
            open_tab(at, label, details_key(at, tabs_prefix))
        texts = [m.label for m in at.metric]
        texts += [line for el in list(at.markdown) + list(at.caption) for line in el.value.splitlines()]
        texts += [str(col) for df in at.dataframe for col in df.value.columns]
        found = [t for t in texts if GPU_NAME.search(t) and A_COST.search(t)]
        for chart in at.get("plotly_chart"):
            figure = json.loads(chart.proto.spec)
            title = figure.get("layout", {}).get("title", {})
            shown = [trace.get("name", "") for trace in figure.get("data", [])]
            found += [
                t
                for t in shown + [title.get("text", ""), title.get("subtitle", {}).get("text", "")]
                if GPU_NAME.search(t)
            ]
        named += found if k == 0 else [t for t in found if t not in named]  # what another tab adds
    assert len(named) >= at_least, named
    return [t for t in named if "modelled" not in t.lower()]


def test_choosing_a_target_changes_the_modelled_figures_and_never_the_measured(app):
    ok(app.run())
    app.button(key="next_preemption").click().run()
    measured, before = measured_metrics(ok(app)), modelled_metrics(app)
    assert len(before) == 4 and all("modelled H100-SXM + Llama-3.1-8B" in label for label in before)
    assert {"Step time (cpu)", "Tokens/s (cpu)", "KV usage", "Preemptions"} <= set(measured)
    columns = list(open_tab(app, "Requests").dataframe[0].value.columns)
    assert "TTFT ms (engine time)" in columns and "TTFT ms (modelled H100-SXM + Llama-3.1-8B)" in columns
    narration = [line for m in app.markdown for line in m.value.splitlines()]
    assert any(line.startswith("- Modelled H100-SXM + Llama-3.1-8B: re-prefilling req") for line in narration)
    app.selectbox(key="sb_target_gpu").set_value("L4").run()
    after = modelled_metrics(ok(app))
    assert all("modelled L4 + Llama-3.1-8B" in label for label in after) and len(after) == 4
    assert list(after.values()) != list(before.values())  # a slower GPU: other values
    assert measured_metrics(app) == measured  # the measured row is untouched
    assert "TTFT ms (engine time)" in app.dataframe[0].value.columns
    assert "TTFT ms (modelled L4 + Llama-3.1-8B)" in app.dataframe[0].value.columns
    app.selectbox(key="sb_target_dtype").set_value("fp32").run()
    assert all("(fp32)" in label for label in modelled_metrics(ok(app)))
    app.selectbox(key="sb_target_gpu").set_value("A100-80GB-SXM").run()
    app.selectbox(key="sb_target_dtype").set_value("fp8").run()  # A100 has no fp8: refused, said why
    assert any("has no fp8 tensor cores" in e.value for e in app.error)
    assert all("A100-80GB-SXM + Llama-3.1-8B (fp32)" in label for label in modelled_metrics(app))
    assert not unlabelled_modelled_text(app, at_least=8)


def test_the_pool_is_sized_in_gib_of_the_target_models_kv(app):
    ok(app.run())
    assert any("The tiny model still produces the tokens" in c.value for c in app.caption)
    app.number_input(key="target_pool_gib").set_value(0.25)
    app.button(key=POOL).click().run()
    assert app.session_state["lab"].config.num_gpu_blocks == 128  # 0.25 GiB / 2 MiB per 16-token Llama-3.1-8B block
    app.number_input(key="target_pool_gib").set_value(8.0).run()  # said as it is typed; Set pool is off
    assert any(
        "8 GiB is 4096 blocks of Llama-3.1-8B KV; the app takes at most 512" in e.value.replace("\\", "")
        for e in ok(app).error
    )
    assert app.button(key=POOL).disabled
    app.number_input(key="target_pool_gib").set_value(0.0001).run()
    assert any("less than one block of Llama-3.1-8B KV" in e.value.replace("\\", "") for e in ok(app).error)
    assert app.session_state["lab"].config.num_gpu_blocks == 128  # nothing lost


def test_the_sweep_page_prices_every_run_on_the_target_beside_the_measured(random_llama_path, monkeypatch):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    at = ok(AppTest.from_function(sweep_page, default_timeout=60).run())
    at.text_input(key="sw_values_num_gpu_blocks").set_value("60,90")
    at.number_input(key="sw_n_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_max_tokens_num_gpu_blocks").set_value(16)
    at.number_input(key="sw_block_size_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_repeats_num_gpu_blocks").set_value(1)
    at.button(key=RUN_SWEEP).click().run()
    table = ok(at).dataframe[0].value
    assert {"wall_s", "tokens_per_s", "modelled_s", "modelled_tokens_per_s"} <= set(table.columns)
    assert set(table["modelled_target"]) == {"H100-SXM + Llama-3.1-8B"} and (table["modelled_s"] > 0).all()
    measured = table[["series", "value", "cpu_s", "wall_s", "tokens_per_s"]].copy()
    at.selectbox(key="sw_target_gpu").set_value("RTX-4090").run()  # no rerun of the sweep: priced again
    again = ok(at).dataframe[0].value
    assert set(again["modelled_target"]) == {"RTX-4090 + Llama-3.1-8B"}
    assert (again["modelled_s"] != table["modelled_s"]).all()
    assert again[["series", "value", "cpu_s", "wall_s", "tokens_per_s"]].equals(measured)
    assert not unlabelled_modelled_text(at, at_least=8, tabs_prefix=None)


def test_a_lesson_shows_its_own_target_and_labels_every_modelled_figure(monkeypatch):
    monkeypatch.delenv("PYKV_MODEL", raising=False)  # the shipped model the lessons are written for
    at = AppTest.from_function(lessons_page, default_timeout=180)
    at.session_state["target"] = dataclasses.replace(DEFAULT_TARGET, gpu="L4")  # the Playground's choice...
    at.query_params["lesson"] = "the-cost-bill"
    at.query_params["step"] = "4"
    ok(at.run())
    assert any(m.value == "### The same bill on a GPU (modelled)" for m in at.markdown)
    assert not [m.value for m in at.markdown if "✗" in m.value]  # the lesson's modelled checks pass
    labels = modelled_metrics(at)
    assert labels and all("modelled H100-SXM + Llama-3.1-8B" in label for label in labels)  # ...not the lesson's
    assert not unlabelled_modelled_text(at, at_least=8, tabs_prefix="lesson_")


def test_modelled_ttft_of_a_request_prefilled_in_its_first_step_is_that_step(app):
    """Issue 28 item 8: a request added before a step and prefilled in it waited for that step; its modelled
    TTFT is never 0 while its measured one is not."""
    for key, value in {"preset": "storm", "num_gpu_blocks": "24", "step": "18"}.items():
        app.query_params[key] = value
    ok(app.run())
    table = open_tab(app, "Requests").dataframe[0].value
    modelled = next(c for c in table.columns if c.startswith("TTFT ms (modelled"))
    shown = table[table["TTFT ms (engine time)"].notna()]
    assert len(shown) >= 3
    assert (shown[modelled].astype(float) > 0).all(), shown[["TTFT ms (engine time)", modelled]]


def test_a_preemption_bill_of_0_says_why_where_it_is_shown(app):
    """Issue 28 item 9: two preemptions, none re-prefilled yet: the bill reads 0.00 ms and says they are open,
    and each row of the Costs table whose bill is 0 says why."""
    for key, value in {"preset": "storm", "num_gpu_blocks": "24", "step": "18"}.items():
        app.query_params[key] = value
    ok(app.run())
    bill = next(m for m in app.metric if m.label.startswith("Preemption bill (modelled"))
    assert "open" in bill.value and "billed when they happen" in bill.help
    costs = next(
        df.value
        for df in open_tab(app, "Preemption costs").dataframe
        if "why the bill is 0 or small" in df.value.columns
    )
    column = next(c for c in costs.columns if c.startswith("bill ms (modelled"))
    zero = costs[costs[column].astype(float) < 0.01]
    assert len(zero) and (zero["why the bill is 0 or small"] != "").all()


def test_a_stepped_run_shows_engine_time_never_the_users_pauses(app):
    """Issue 28 item 10: TTFT on a hand-stepped run is the engine's time (the step times summed), named so; a
    pause between clicks adds nothing to it."""
    import time

    ok(app.run())
    app.button(key="step").click().run()
    time.sleep(1.5)  # the user's pause: measured wall time would include it
    app.button(key="step").click().run()
    table = open_tab(ok(app), "Requests").dataframe[0].value
    assert "TTFT ms (engine time)" in table.columns and "TTFT ms" not in table.columns
    ttft = table["TTFT ms (engine time)"].dropna().astype(float)
    assert len(ttft) and (ttft > 0).all() and (ttft < 1500).all()
    assert any("engine time" in c.value and "pauses" in c.value for c in app.caption)


def test_a_review_pack_number_is_never_in_scientific_notation():
    from pykv.review_pack.page import cell_text

    assert [cell_text(v) for v in (1.22e5, 12.345, 0.0016, 0.0, 459.2)] == ["122,000", "12.3", "0.00160", "0", "459"]
