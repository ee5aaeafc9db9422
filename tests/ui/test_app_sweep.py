"""The Sweep page through AppTest on the random checkpoint (PYKV_MODEL): a tiny sweep, its charts,
its CSV downloads, results that outlive a rerun, and bad input as a message."""

from __future__ import annotations

import pytest
from app_helpers import sweep_page
from streamlit.testing.v1 import AppTest

from pykv import EngineConfig
from pykv.lab.sweep import SweepSpec, iter_runs
from pykv.ui.pages.sweep import SweepRun

RUN = "FormSubmitter:sweep_form_num_gpu_blocks-Run sweep"
MEASURED_AND_MODELLED = {"sweep_runs", "sweep_costs", "sweep_modelled_runs", "sweep_crossover"}


def charts(at: AppTest) -> set[str]:
    return {c.key for c in at.get("plotly_chart")}


@pytest.fixture
def page(random_llama_path, monkeypatch) -> AppTest:
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    at = AppTest.from_function(sweep_page, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def submit(at: AppTest, values: str) -> AppTest:
    at.text_input(key="sw_values_num_gpu_blocks").set_value(values)
    at.number_input(key="sw_n_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_max_tokens_num_gpu_blocks").set_value(16)
    at.number_input(key="sw_block_size_num_gpu_blocks").set_value(4)
    at.button(key=RUN).click().run()
    assert not at.exception, at.exception
    return at


def test_a_small_sweep_draws_its_charts_and_offers_the_csv(page):
    assert page.info and not page.get("plotly_chart")  # nothing run yet
    submit(page, "24,60")
    assert not page.error and "4 of 4 runs" in page.success[0].value and "`cpu`" in page.success[0].value
    assert MEASURED_AND_MODELLED <= charts(page)  # runs, cost of one preemption, modelled throughput, crossover
    csv = [d.proto.label for d in page.get("download_button") if d.key.endswith("csv")]  # figures: test_app_export
    assert csv == ["Runs (CSV)", "Preemptions (CSV)"]
    run = page.session_state["sweep_run"]
    assert run.done and [r["value"] for r in run.rows] == [24, 24, 60, 60]
    page.run()  # a rerun (or a visit to another page and back) keeps the results
    assert MEASURED_AND_MODELLED <= charts(page) and page.session_state["sweep_run"] is run


@pytest.mark.parametrize(
    "values, words", [("16-64", "start:stop:step"), ("64:16:8", "gives no values"), ("1:500:1", "at most 60")]
)
def test_bad_values_are_a_message_not_a_traceback(page, values, words):
    submit(page, values)
    assert any(words in e.value for e in page.error) and "sweep_run" not in page.session_state


def test_a_stopped_sweep_shows_the_runs_it_finished(page, random_llama_path, random_llama):
    """What Cancel leaves behind: the page is stopped mid-loop, after filing a run (see sweep_page)."""
    base = EngineConfig(model=str(random_llama_path), block_size=4)
    spec = SweepSpec(workload_args={"n": 4, "max_tokens": 16}, values=(24, 60), base=base)
    row, costs = next(iter_runs(spec, random_llama))
    run = SweepRun(spec, total=4, shape=None, rows=[row], costs=costs)
    page.session_state["sweep_run"] = run
    page.run()
    assert "Stopped: 1 of 4 runs" in page.warning[0].value and MEASURED_AND_MODELLED <= charts(page)


def test_other_axes_have_their_own_form(page):
    page.segmented_control(key="sweep_axis").set_value("max_num_seqs").run()
    assert page.text_input(key="sw_values_max_num_seqs").value == "2,4,6,8,12,16"
    page.segmented_control(key="sweep_axis").set_value("block_size").run()
    assert page.multiselect(key="sw_modes_block_size").value == ["recompute", "swap", "swap per-block"]
