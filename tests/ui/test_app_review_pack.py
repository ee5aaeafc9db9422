"""The Review pack control on the Playground, the Sweep page and the Lessons page (AppTest): it is there,
and what its buttons hand Streamlit makes a non-empty page and zip. AppTest cannot press a download
button (its bytes are made at the click), so the callables are caught where Streamlit files them."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from app_helpers import APP, lessons_page, ok, sweep_page
from streamlit.testing.v1 import AppTest

import pykv.review_pack.bundle as bundle
from pykv.review_pack import sweep_pack
from pykv.ui.views.panels import review_pack_button

LABELS = ["HTML page", "Zip"]
LESSON = """---
id: pack
title: A lesson in a pack
summary: Two steps, for the review pack test.
seed: 0
config: {num_gpu_blocks: 16, block_size: 4, max_num_seqs: 4}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 6, ignore_eos: true}
---

## First

One **engine** step: `a` runs.

```actions
- step: 1
```

```expect
- that: engine.step
  equals: 1
```

## Second

Two more.

```actions
- step: 2
```
"""


def pack_buttons(at: AppTest) -> list[str]:
    return [d.proto.label for d in at.get("download_button") if d.proto.label in LABELS]


def opened_pack(at: AppTest, key: str) -> AppTest:
    """Open the page's Review pack popover (its buttons are drawn only when it is open) and rerun."""
    assert not pack_buttons(at)  # closed: no buttons, and nothing of the pack taken
    at.session_state[f"{key}_review_pack"] = True
    return ok(at.run())


def check_pack(deferred: dict, page: str, stem: str, *words: str) -> zipfile.ZipFile:
    """The page's two buttons: a whole HTML page holding ``words``, and a zip holding that page."""
    (html, html_name, _), (zipped, zip_name, _) = deferred[f"{page}_review_html"], deferred[f"{page}_review_zip"]
    assert (html_name, zip_name) == (f"{stem}.html", f"{stem}.zip")
    text = html().decode()
    assert text.startswith("<!DOCTYPE html>") and len(text) > 1_000_000  # plotly.js is inside
    for w in words:
        assert w in text, w
    z = zipfile.ZipFile(io.BytesIO(zipped()))
    assert z.read("review.html") and "README.txt" in z.namelist()
    return z


@pytest.fixture(autouse=True)
def no_browser(monkeypatch):
    """The zip's images are pykv.review_pack.export's business (tested there): a stand-in keeps these tests fast."""
    monkeypatch.setattr(bundle, "export_image", lambda fig, fmt, **kw: b"<svg/>" if fmt == "svg" else b"\x89PNG")


def test_the_playground_offers_the_pack_of_its_run(random_llama_path, monkeypatch, deferred):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    at = opened_pack(ok(AppTest.from_file(APP, default_timeout=60).run()), "playground")
    assert pack_buttons(at) == LABELS
    at.button(key="step").click().run()
    at.button(key="step").click().run()
    assert pack_buttons(ok(at)) == LABELS  # still open: the pack is taken afresh at each step
    z = check_pack(
        deferred,
        "playground",
        "pykv_review_step2",
        '<section id="timeline">',
        "?preset=storm&amp;step=2",
        '<section id="modelled">',
        "Modelled on H100-SXM + Llama-3.1-8B",
        "the link is relative",  # no browser, no PYKV_PUBLIC_URL: no address to put it under, and it says so
    )  # the session's target
    assert "snapshot_step_2.json" in z.namelist()


def test_the_playground_pack_links_under_the_labs_public_address(random_llama_path, monkeypatch, deferred):
    """Issue 48 #13: a relative link pasted into a design doc cannot be clicked."""
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    monkeypatch.setenv("PYKV_PUBLIC_URL", "https://lab.example.org/")
    at = opened_pack(ok(AppTest.from_file(APP, default_timeout=60).run()), "playground")
    ok(at.button(key="step").click().run())
    link = "https://lab.example.org/?preset=storm&amp;step=1"
    z = check_pack(deferred, "playground", "pykv_review_step1", f'<a href="{link}">{link}</a>')
    assert "Link into the lab: https://lab.example.org/?preset=storm&step=1\n" in z.read("README.txt").decode()
    assert "the link is relative" not in z.read("review.html").decode()


def test_the_sweep_page_offers_the_pack_of_its_sweep(random_llama_path, monkeypatch, deferred):
    monkeypatch.setenv("PYKV_MODEL", str(random_llama_path))
    packs = []

    def recording(*args, **kwargs):
        packs.append(sweep_pack(*args, **kwargs))
        return packs[-1]

    monkeypatch.setattr(review_pack_button, "sweep_pack", recording)
    at = ok(AppTest.from_function(sweep_page, default_timeout=60).run())
    assert not pack_buttons(at)  # nothing to pack before a sweep
    at.text_input(key="sw_values_num_gpu_blocks").set_value("60,90")
    at.number_input(key="sw_n_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_max_tokens_num_gpu_blocks").set_value(16)
    at.number_input(key="sw_block_size_num_gpu_blocks").set_value(4)
    at.number_input(key="sw_repeats_num_gpu_blocks").set_value(1)
    at.button(key="FormSubmitter:sweep_form_num_gpu_blocks-Run sweep").click().run()
    assert pack_buttons(opened_pack(ok(at), "sweep")) == LABELS
    z = check_pack(
        deferred,
        "sweep",
        "pykv_review_sweep_num_gpu_blocks",
        '<section id="charts">',
        '<section id="runs">',
        "4 of 4",
        "--preemption-mode swap",
        "--swap-space 0.00",
        '<section id="modelled">',
        "Modelled on H100-SXM + Llama-3.1-8B",
    )
    assert {"sweep_runs.csv", "sweep_preemptions.csv"} <= set(z.namelist())
    # every chart the page draws is in the pack, in the page's order (issue 28 #14: the pack had 2 of the 5)
    page = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert len(page) == 5 and [f.figure.layout.title.text for f in packs[0].figures()] == page


def test_the_lessons_page_offers_the_pack_of_the_steps_played(course_folder, monkeypatch, deferred):
    monkeypatch.delenv("PYKV_MODEL", raising=False)
    monkeypatch.setenv("PYKV_PUBLIC_URL", "https://lab.example.org")  # its links are full addresses under it
    course_folder(("01-pack.md", LESSON))
    at = AppTest.from_function(lessons_page, default_timeout=180)
    at.query_params["lesson"] = "pack"
    at.query_params["step"] = "2"
    assert pack_buttons(opened_pack(ok(at.run()), "lesson")) == LABELS
    check_pack(
        deferred,
        "lesson",
        "pykv_review_pack",
        '<section id="step-1">',
        '<section id="step-2">',
        "✓ pass",
        "<strong>engine</strong>",
        'link: <a href="https://lab.example.org/lessons?lesson=pack&amp;step=1">',  # each step's own
        'Link: <a href="https://lab.example.org/lessons?lesson=pack&amp;step=2">',  # the steps played
    )
