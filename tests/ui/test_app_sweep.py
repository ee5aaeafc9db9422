"""The Sweep page through AppTest on the random checkpoint (PYKV_MODEL): a tiny sweep, its charts,
its CSV downloads, results that outlive a rerun, and bad input as a message; one release per comparison unless
asked, repeats, the clock the charts show, and a preset whose sizes follow it (issue 47)."""

from __future__ import annotations

import json

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


def chart(at: AppTest, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


@pytest.fixture
def page(random_llama_path, monkeypatch) -> AppTest:
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    at = AppTest.from_function(sweep_page, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def submit(at: AppTest, values: str, repeats: int = 1, **widgets) -> AppTest:
    at.text_input(key="sw_values_num_gpu_blocks").set_value(values)
    at.number_input(key="sw_n_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_max_tokens_num_gpu_blocks").set_value(16)
    at.number_input(key="sw_block_size_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_repeats_num_gpu_blocks").set_value(repeats)
    for key, value in widgets.items():
        getattr(at, "multiselect" if key.startswith("sw_extra") else "checkbox")(key=key).set_value(value)
    at.button(key=RUN).click().run()
    assert not at.exception, at.exception
    return at


def test_the_form_defaults_to_recompute_against_swap_under_v06_with_repeats(page):
    assert page.selectbox(key="sw_profile_num_gpu_blocks").value == "v0.6"
    assert page.multiselect(key="sw_modes_num_gpu_blocks").value == ["recompute", "swap"]
    assert page.multiselect(key="sw_extra_num_gpu_blocks").value == []
    assert page.checkbox(key="sw_across_num_gpu_blocks").value is False
    assert page.number_input(key="sw_repeats_num_gpu_blocks").value == 3
    assert page.selectbox(key="sw_preset_num_gpu_blocks").value == "small_storm"
    assert page.number_input(key="sw_n_num_gpu_blocks").value == 8
    assert page.number_input(key="sw_max_tokens_num_gpu_blocks").value == 48
    assert page.text_input(key="sw_values_num_gpu_blocks").value == "20,28,36"


def test_a_preset_brings_its_own_sizes(page):
    """The storm is 12 x 128 tokens here as in the Playground; the small storm 8 x 48."""
    page.selectbox(key="sw_preset_num_gpu_blocks").set_value("storm").run()
    assert page.number_input(key="sw_n_num_gpu_blocks").value == 12
    assert page.number_input(key="sw_max_tokens_num_gpu_blocks").value == 128
    page.selectbox(key="sw_preset_num_gpu_blocks").set_value("small_storm").run()
    assert page.number_input(key="sw_n_num_gpu_blocks").value == 8
    assert page.number_input(key="sw_max_tokens_num_gpu_blocks").value == 48


def test_a_small_sweep_draws_its_charts_and_offers_the_csv(page):
    assert page.info and not page.get("plotly_chart")  # nothing run yet
    submit(page, "60,90")
    assert not page.error and "4 of 4 points (1 run each)" in page.success[0].value
    assert "`cpu`" in page.success[0].value and "load average" in page.success[0].value
    assert MEASURED_AND_MODELLED <= charts(page)  # runs, cost of one preemption, modelled throughput, crossover
    csv = [d.proto.label for d in page.get("download_button") if d.key.endswith("csv")]  # figures: test_app_export
    assert csv == ["Runs (CSV)", "Preemptions (CSV)"]
    run = page.session_state["sweep_run"]
    assert run.done and [r["value"] for r in run.rows] == [60, 60, 90, 90]
    assert {r["series"] for r in run.rows} == {"recompute, vLLM 0.6.3 (V0)", "swap, vLLM 0.6.3 (V0)"}
    assert any("only the mode differs" in c.value for c in page.caption)
    page.run()  # a rerun (or a visit to another page and back) keeps the results
    assert MEASURED_AND_MODELLED <= charts(page) and page.session_state["sweep_run"] is run


def test_repeats_draw_a_median_with_its_spread_on_the_chosen_clock(page):
    submit(page, "90", repeats=2)
    assert "2 of 2 points (2 runs each)" in page.success[0].value
    figure = chart(page, "sweep_runs")
    assert figure["layout"]["yaxis"]["title"]["text"] == "end-to-end (s, CPU)"
    assert "median of 2 repeats" in figure["layout"]["title"]["subtitle"]["text"]
    assert figure["data"][0]["error_y"]["array"]  # bars from the median to the slowest repeat
    assert page.segmented_control(key="sweep_measure").value == "cpu"
    page.segmented_control(key="sweep_measure").set_value("wall").run()  # a redraw, not a rerun of the sweep
    assert chart(page, "sweep_runs")["layout"]["yaxis"]["title"]["text"] == "end-to-end (s, wall)"
    assert "wall time" in chart(page, "sweep_costs")["layout"]["title"]["subtitle"]["text"]


def test_a_series_on_another_release_needs_compare_across_releases(page):
    submit(page, "90", sw_extra_num_gpu_blocks=["recompute@v0.33"])
    assert any("tick Compare across releases" in e.value for e in page.error)
    assert "sweep_run" not in page.session_state
    submit(page, "90", sw_extra_num_gpu_blocks=["recompute@v0.33"], sw_across_num_gpu_blocks=True)
    assert not page.error
    legend = [t["name"] for t in chart(page, "sweep_runs")["data"] if t.get("showlegend")]
    assert legend == ["recompute, vLLM 0.6.3 (V0)", "swap, vLLM 0.6.3 (V0)", "recompute, vLLM 0.33.0 (V1)"]
    assert any("Compared across releases" in c.value for c in page.caption)


def test_a_mode_its_release_lacks_is_a_message(page):
    page.selectbox(key="sw_profile_num_gpu_blocks").set_value("v0.33")
    submit(page, "90")
    assert any("swap is not in vLLM 0.33.0 (V1)" in e.value for e in page.error)


@pytest.mark.parametrize(
    "values, words", [("16-64", "start:stop:step"), ("64:16:8", "gives no values"), ("1:500:1", "at most 60")]
)
def test_bad_values_are_a_message_not_a_traceback(page, values, words):
    submit(page, values)
    assert any(words in e.value for e in page.error) and "sweep_run" not in page.session_state


def test_a_stopped_sweep_shows_the_points_it_finished(page, random_llama_path, random_llama):
    """What Cancel leaves behind: the page is stopped mid-loop, after filing a point (see sweep_page)."""
    base = EngineConfig(model=str(random_llama_path), block_size=4, vllm_profile="v0.6")
    spec = SweepSpec(workload_args={"n": 4, "max_tokens": 16}, values=(60, 90), base=base, repeats=1)
    row, costs = next(iter_runs(spec, random_llama))
    run = SweepRun(spec, total=4, shape=None, rows=[row], costs=costs)
    page.session_state["sweep_run"] = run
    page.run()
    assert "Stopped: 1 of 4 points" in page.warning[0].value and MEASURED_AND_MODELLED <= charts(page)


def test_other_axes_have_their_own_form(page):
    page.segmented_control(key="sweep_axis").set_value("max_num_seqs").run()
    assert page.text_input(key="sw_values_max_num_seqs").value == "2,4,6,8,12,16"
    assert page.number_input(key="sw_n_max_num_seqs").value == 16  # this axis sizes the small storm up
    page.segmented_control(key="sweep_axis").set_value("block_size").run()
    assert page.multiselect(key="sw_modes_block_size").value == ["recompute", "swap", "swap per-block"]
