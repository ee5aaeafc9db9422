"""The Export control on the Playground and the Sweep page (AppTest, random checkpoint): SVG, PNG and
HTML buttons under each figure whose bytes are made only on a click. AppTest cannot click a download
button, so the callables the page hands Streamlit are caught where Streamlit files them and called."""

from __future__ import annotations

from app_helpers import APP, sweep_page
from streamlit.testing.v1 import AppTest

RUN = "FormSubmitter:sweep_form_num_gpu_blocks-Run sweep"


def export_keys(at: AppTest) -> set[str]:
    return {d.key for d in at.get("download_button") if d.key and d.key.rsplit("_", 1)[-1] in ("svg", "png", "html")}


def opened_exports(at: AppTest, figures) -> AppTest:
    """Open the Export popover of each figure (a popover draws its buttons only when open) and rerun."""
    for figure in figures:
        at.session_state[f"{figure}_export"] = True
    return at.run()


def test_the_playground_offers_every_figure_for_export(random_llama_path, monkeypatch, deferred):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    at.button(key="step").click().run()  # step 1: a link with a step in it
    assert not at.exception, at.exception
    figures = ("grid_gpu", "queues", "timeline", "block_tables")
    assert [p.proto.popover.label for p in at.get("popover")].count("Export") == 4
    closed = {key for key in export_keys(at) | set(deferred) if key.startswith(figures)}
    assert not closed  # closed popovers draw no buttons, and nothing is made
    opened_exports(at, figures)
    assert not at.exception, at.exception
    for figure in figures:
        assert {f"{figure}_svg", f"{figure}_png", f"{figure}_html"} <= export_keys(at)
    make, name, mime = deferred["grid_gpu_svg"]
    assert name == "pykv_step1_kv_pool.svg" and mime == "image/svg+xml"
    svg = make()
    assert svg.startswith(b"<svg") and b"Device KV pool" in svg
    # no browser here and no PYKV_PUBLIC_URL: no address to put the link under, and the label says so
    assert b"link (append to the lab's address): ?preset=storm&amp;step=1" in svg
    page, name, _ = deferred["timeline_html"]
    assert name == "pykv_step1_timeline.html" and b"step times measured on cpu" in page()


def test_an_exported_figure_links_under_the_labs_public_address(random_llama_path, monkeypatch, deferred):
    """Issue 48 #13: "link: ?preset=storm&step=40" pasted into a design doc cannot be clicked."""
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    monkeypatch.setenv("PYKV_PUBLIC_URL", "https://lab.example.org/pykv/")
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.button(key="step").click().run()
    opened_exports(at, ("queues",))
    assert not at.exception, at.exception
    svg = deferred["queues_svg"][0]()
    assert b"link: https://lab.example.org/pykv/?preset=storm&amp;step=1<" in svg


def test_the_sweep_charts_offer_export_with_the_command_that_reruns_them(random_llama_path, monkeypatch, deferred):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    at = AppTest.from_function(sweep_page, default_timeout=60).run()
    at.text_input(key="sw_values_num_gpu_blocks").set_value("60,90")
    at.number_input(key="sw_n_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_max_tokens_num_gpu_blocks").set_value(16)
    at.number_input(key="sw_block_size_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_repeats_num_gpu_blocks").set_value(1)
    at.button(key=RUN).click().run()
    assert not at.exception, at.exception
    opened_exports(at, ("sweep_runs", "sweep_costs"))
    assert {f"sweep_{c}_{f}" for c in ("runs", "costs") for f in ("svg", "png", "html")} <= export_keys(at)
    make, name, mime = deferred["sweep_runs_png"]
    assert name == "pykv_sweep_num_gpu_blocks_runs@2x.png" and mime == "image/png"
    png = make()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 2 * 1100
    html = deferred["sweep_costs_html"][0]().decode()
    command = (
        "python -m pykv sweep --workload small_storm --num-requests 4 --max-tokens 16 --pool-sizes 60,90 "
        "--modes recompute,swap --repeats 1"
    )
    assert f"reproduce: {command}" in html


def test_without_a_browser_the_image_buttons_say_why_and_html_still_works(random_llama_path, monkeypatch):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    at = opened_exports(AppTest.from_file(APP, default_timeout=60).run(), ["grid_gpu"])
    assert not at.exception, at.exception
    buttons = {d.key: d for d in at.get("download_button")}
    assert buttons["grid_gpu_svg"].proto.disabled and buttons["grid_gpu_png"].proto.disabled
    assert not buttons["grid_gpu_html"].proto.disabled
    assert any("no browser at" in c.value and "nonexistent" in c.value for c in at.caption)
