"""The review pack (issue 16, part 3): one self-contained HTML page with every section and no network
request, the zip (with and without static export) and the CLI, whose
bad input is one ``error:`` line, a non-zero exit code and no file, half-written or whole."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import zipfile
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from hand_made import snapshot as hand_made_snapshot

import pykv.review_pack.bundle as bundle
from pykv.border.config import EngineConfig
from pykv.border.snapshot import Snapshot
from pykv.border.step_report import PreemptionView
from pykv.border.vllm_command import (
    command_caveat,
    knob_mappings,
    llm_kwargs,
    serve_command,
)
from pykv.border.workload import Workload, make_workload
from pykv.cli.main import main
from pykv.gpu_model import Target
from pykv.lab.lab import Lab, lab_config
from pykv.review_pack import build_zip, record_from_lab, render_html, run_pack
from pykv.review_pack.deep_link import link_caveats, playground_query
from pykv.review_pack.export import ExportUnavailable
from pykv.review_pack.fit import overflows
from pykv.review_pack.page import HALF_WIDTH_PX, Figures, ReviewPack, Section, frame_table, plotly_js
from pykv.review_pack.run import bill_frame, grid_figures
from pykv.review_pack.text import markdown_html
from testkit.review_packs import assert_fits, section, section_html, visible_text

SECTIONS = ["config", "workload", "timeline", "grids", "bill", "requests", "modelled", "metrics", "logs"]


@pytest.fixture(scope="module")
def record(random_llama, random_llama_path):
    """A v0.6 swap run of a small storm on the random checkpoint, to its end (about 50 steps), with preemptions."""
    config = lab_config(
        model=str(random_llama_path),
        vllm_profile="v0.6",
        num_gpu_blocks=24,
        block_size=8,
        preemption_mode="swap",
        num_cpu_blocks=48,
    )
    lab = Lab(config, random_llama, workload=make_workload("storm", n=4, max_tokens=24))
    lab.goto(60)
    assert lab.view.preemptions, "the fixture must preempt"
    return record_from_lab(lab, preset="storm", preset_args={"n": 4, "max_tokens": 24})


@pytest.fixture(scope="module")
def pack(record):
    return run_pack(record)


@pytest.fixture(scope="module")
def html(pack) -> str:
    return render_html(pack).decode("utf-8")


class Tags(HTMLParser):
    """Every start tag and its attributes (script bodies are data, not tags)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_the_page_has_every_section_and_figure(html, pack):
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in html and f'href="#{sid}"' in html
    for words in (
        "vllm serve",
        "LLM(",
        "pykv only, no vLLM flag",
        "Preemption bill",
        "TPOT ms",
        "# TYPE vllm:num_preemptions_total counter",
        "[step 1",
    ):
        assert words in html, words
    figures = pack.figures()
    assert [f.name for f in figures][0] == "timeline" and any(f.name.startswith("grid-step-") for f in figures)
    assert html.count("Plotly.newPlot(") == len(figures)
    assert len({f.name for f in figures}) == len(figures)


def test_plotly_js_is_embedded_once_and_nothing_is_fetched(html):
    assert html.count(plotly_js()) == 1
    parser = Tags()
    parser.feed(html)
    urls = [(tag, k, v) for tag, attrs in parser.tags for k, v in attrs.items() if k in ("src", "href") and v]
    assert all(not re.match(r"(?i)\s*(https?:)?//", v) for _, _, v in urls), urls
    assert not [t for t, a in parser.tags if t in ("link", "img", "iframe") or (t == "script" and "src" in a)]
    rest = html.replace(plotly_js(), "")
    assert not re.search(r"(?i)https?://|mathjax|@import|@font-face|cdn\.", rest)


def test_hostile_text_in_a_run_stays_text(random_llama, random_llama_path):
    evil = '<img src="https://evil.invalid/x.png">'
    workload = Workload(name=evil, requests=[{"prompt": evil + "</script>", "max_tokens": 3, "request_id": evil}])
    lab = Lab(lab_config(model=str(random_llama_path)), random_llama, workload=workload)
    lab.goto(5)
    page = render_html(run_pack(record_from_lab(lab))).decode()
    parser = Tags()
    parser.feed(page.replace(plotly_js(), ""))
    assert not [t for t, _ in parser.tags if t == "img"] and "evil.invalid" in page  # shown, escaped, never fetched
    assert page.count("</script>") == 1 + page.count("Plotly.newPlot(")  # plotly.js's, then one per figure


def test_print_css_breaks_pages_between_sections_and_never_splits_a_figure(html):
    assert "@media print" in html and "break-before: page" in html
    assert re.search(r"figure \{[^}]*break-inside: avoid", html)


def test_the_page_is_the_same_bytes_for_the_same_pack(pack):
    assert render_html(pack) == render_html(pack)


def test_the_link_is_relative_and_says_what_it_cannot_carry(record, html):
    assert record.link.startswith(f"?preset=storm&step={record.last.step}&") and "num_gpu_blocks=24" in record.link
    assert "vllm_profile=v0.6" in record.link and "preemption_mode=swap" in record.link
    assert any("n=4" in note for note in record.link_caveats())
    assert record.link.replace("&", "&amp;") in html
    config = EngineConfig(num_gpu_blocks=1024, max_model_len=64)
    notes = " ".join(link_caveats(config, seed=3, manual_requests=2))
    assert "seed 3" in notes and "max_model_len=64" in notes and "at most 512" in notes and "2 request" in notes
    assert playground_query(EngineConfig(), "burst", 0) == "?preset=burst&step=0"


def test_under_the_labs_address_every_link_is_a_full_one(record, monkeypatch):
    """Issue 48 #13: the pack's link, each exported image's and the README's, pasted into a design doc, open the lab."""
    pack = run_pack(replace(record, lab_root="https://lab.example.org"))
    step = record.last.step
    assert pack.link.startswith(f"https://lab.example.org/?preset=storm&step={step}&")
    text = section_html(render_html(pack).decode(), "workload")
    assert f'<a href="{pack.link.replace("&", "&amp;")}">' in text and "relative" not in visible_text(text)
    exported = {}

    def recording(fig, fmt, *, caption, link=None, link_label="link", **kwargs):
        exported[caption] = (link, link_label)
        return fake_export(fig, fmt, caption=caption, link=link)

    monkeypatch.setattr(bundle, "export_image", recording)
    z = zipfile.ZipFile(io.BytesIO(build_zip(pack)))
    assert f"Link into the lab: {pack.link}\n" in z.read("README.txt").decode()
    early = next(f for f in pack.figures() if f.step is not None and f.step < step)
    link, label = exported[early.caption]
    assert link.startswith("https://lab.example.org/?preset=storm&") and f"step={early.step}" in link
    assert label == "link"
    build_zip(run_pack(record))  # no address known: relative, and the label says so
    assert exported[early.caption][1] == "link (append to the lab's address)"


def test_a_v0_run_on_a_cpu_gets_the_gpu_command_and_says_why(html):
    """vLLM 0.6.3.post1 on a CPU turns chunked prefill and prefix caching off (executor/cpu_executor.py) and has no
    swap space (worker/cpu_worker.py): --device cpu would not reproduce the run, so the command is the GPU's."""
    config = EngineConfig(vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=8, enable_prefix_caching=True)
    device = next(m for m in knob_mappings(config) if m.knob == "device")
    assert device.args == ("--device", "cuda") and llm_kwargs(config)["device"] == "cuda"
    assert all(words in device.note for words in ("chunked prefill", "prefix caching", "no swap space"))
    assert command_caveat(config) and command_caveat(config.replace(device="cuda")) is None
    assert command_caveat(EngineConfig(vllm_profile="v0.33")) is None  # V1 has no --device: nothing to swap out
    assert "this is the command for a GPU" in html  # the review pack's fixture is a v0.6 run on the CPU


def cells(table_html: str) -> list[list[str]]:
    """Each row of a page table as the text of its cells (header row first)."""
    rows = re.findall(r"(?s)<tr>(.*?)</tr>", table_html)
    return [[visible_text(c).strip() for c in re.findall(r"(?s)<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in rows]


def test_the_bill_names_a_fallen_back_swap_and_counts_steps_in_whole_numbers():
    """A swap that fell back read "recompute (recompute)"; a column of counts with one still open (None) printed its
    whole numbers as floats ("9.00", "10.0")."""

    def view(rid, mode, steps_lost, **extra):
        return PreemptionView(
            step=3, request_id=rid, mode=mode, num_blocks=3, num_tokens=33, num_bytes=98304, device="cpu",
            steps_lost=steps_lost, **extra,
        )  # fmt: skip

    preempted = [
        view("7", "recompute", 9, fallback="recompute", reason="CPU swap pool has 0 free blocks of 6"),
        view("8", "recompute", 10),
        view("9", "swap", None, swap_out_s=0.0003, modelled_pcie_out_s=0.00001),
    ]
    head, *rows = cells(frame_table(bill_frame(hand_made_snapshot([], [], preemptions=preempted))))
    mode, lost = head.index("mode"), head.index("steps lost")
    assert [r[mode] for r in rows] == ["recompute (swap fell back)", "recompute", "swap"]
    assert [r[lost] for r in rows] == ["9", "10", "—"]  # whole numbers, a dash while the swap is still out


def test_the_configuration_table_shows_what_pykv_ran_with(record, html):
    """The fixture is a v0.6 run on the CPU with num_cpu_blocks=48: its device row said "cuda" (the command's word)
    and its swap_space row "0.0" beside --swap-space 0.00146484375 (the GiB those blocks are)."""
    (table_html,) = re.findall(r"(?s)<table class=\"config\".*?</table>", section_html(html, "config"))
    rows = {r[0]: r[1:] for r in cells(table_html)[1:]}
    assert rows["device"][:2] == ["cpu", "--device cuda"] and "this is the command for a GPU" in rows["device"][2]
    swap_space, flag = rows["swap_space"][:2]
    assert flag == f"--swap-space {swap_space}" and float(swap_space) > 0, rows["swap_space"]
    assert "num_cpu_blocks=48" in rows["swap_space"][2]
    assert rows["model"][0] == record.config.model  # pykv's value; the flag names the folder


def test_a_max_model_len_fitted_to_the_pool_is_passed_on(record, html):
    assert record.config.max_model_len is None and record.max_model_len == 24 * 8  # fitted to the pool
    assert f"--max-model-len {record.max_model_len}" in html  # else vLLM would refuse to start
    note = next(m.note for m in knob_mappings(EngineConfig(), max_model_len=1024) if m.knob == "max_model_len")
    assert "--max-model-len -1" in note  # 0.33.0 can fit it itself
    v010 = EngineConfig(vllm_profile="v0.10")
    note = next(m.note for m in knob_mappings(v010, max_model_len=1024) if m.knob == "max_model_len")
    assert "would start with the model's context" in note and "refuse" not in note  # 0.10.2 checks memory only
    assert "--max-model-len" not in serve_command(EngineConfig())  # unknown: the release's default, said so


def fake_export(fig, fmt, *, scale=1, caption, link=None, **kwargs) -> bytes:
    return b"<svg/>" if fmt == "svg" else b"\x89PNG\r\n\x1a\n"


def test_the_zip_holds_the_page_every_figure_the_csvs_and_the_snapshot(pack, record, monkeypatch):
    monkeypatch.setattr(bundle, "export_image", fake_export)
    z = zipfile.ZipFile(io.BytesIO(build_zip(pack)))
    names = z.namelist()
    figures = [f"figures/{f.name}.{ext}" for f in pack.figures() for ext in ("svg", "png")]
    snapshot = next(n for n in names if n.startswith("snapshot_step_"))
    files = [
        "README.txt",
        "review.html",
        "requests.csv",
        "preemptions.csv",
        "modelled_requests.csv",
        "modelled_preemptions.csv",
        snapshot,
        "workload.json",
    ]
    assert names == files + figures
    assert Workload.from_json(z.read("workload.json").decode()) == record.workload  # runs again with --workload
    assert Snapshot.from_json(z.read(snapshot).decode()) == record.last
    assert z.read("preemptions.csv").decode().startswith("step,request_id,mode")
    assert "NO SVG/PNG" not in z.read("README.txt").decode()
    assert build_zip(pack) == build_zip(pack)  # same bytes


def test_each_grid_image_links_to_the_step_it_draws_and_the_cpu_grid_has_its_legend(pack, record, monkeypatch):
    links = {}

    def recording(fig, fmt, *, caption, link=None, **kwargs):
        links[caption] = link
        return fake_export(fig, fmt, caption=caption, link=link)

    monkeypatch.setattr(bundle, "export_image", recording)
    build_zip(pack)
    early = next(f for f in pack.figures() if f.name.startswith("grid-step-") and f.name.endswith("-gpu"))
    assert early.step < record.last.step and f"step={early.step}" in links[early.caption]
    assert f"step={record.last.step}" not in links[early.caption] and links[early.caption].count("step=") == 1
    cpu = next(f for f in pack.figures() if f.name.endswith("-cpu"))
    assert any("changed this step" in a.text for a in cpu.figure.layout.annotations)


def test_the_crossover_image_carries_no_run_link_and_says_modelled_once(pack, monkeypatch):
    """The crossover prices one victim on the target: the same for any run, so a run link on it misled; its title and
    subtitle say it is modelled, and its caption said "Modelled, not measured" again."""
    links = {}

    def recording(fig, fmt, *, caption, link=None, **kwargs):
        links[caption] = link
        return fake_export(fig, fmt, caption=caption, link=link)

    monkeypatch.setattr(bundle, "export_image", recording)
    build_zip(pack)
    crossover = next(f for f in pack.figures() if f.name == "modelled-crossover")
    assert links[crossover.caption] is None and all(links[f.caption] for f in pack.figures() if f is not crossover)
    said = " ".join(
        [crossover.caption, crossover.figure.layout.title.text, crossover.figure.layout.title.subtitle.text]
    )
    assert said.count("not measured") == 1 and "not on the run" in crossover.caption


def test_every_figure_fits_the_width_it_is_drawn_at(pack):
    assert_fits(pack)
    grid = next(f for f in pack.figures() if f.name.endswith("-cpu"))  # the half-width grid's legend wraps to it
    legend = grid.figure.layout.annotations[0].text
    assert legend.count("<br>") >= 1 and overflows(grid.figure, HALF_WIDTH_PX) == []


def test_the_run_pack_prices_the_run_on_its_target_and_says_it_is_modelled(pack, record, html):
    modelled = section(pack, "modelled")
    label = record.target.estimate().label
    assert label == "H100-SXM + Llama-3.1-8B" and modelled.title == f"Modelled on {label}"
    figures = modelled.figures()
    assert [f.name for f in figures] == ["modelled-crossover"]
    title = figures[0].figure.layout.title
    assert "modelled" in title.text and label in title.text and "Modelled, not measured" in title.subtitle.text
    text = visible_text(section_html(html, "modelled"))
    for words in (
        "Modelled, not measured, on H100-SXM + Llama-3.1-8B",
        "Clock (modelled H100-SXM + Llama-3.1-8B)",
        "Preemption bill (modelled H100-SXM + Llama-3.1-8B)",
        "bill ms (modelled H100-SXM + Llama-3.1-8B)",
        "TTFT ms (modelled H100-SXM + Llama-3.1-8B)",
        "NVIDIA H100",
        "How the modelled figures are computed",
    ):
        assert words in text, words
    requests = visible_text(section_html(html, "requests"))
    assert "modelled" not in requests.replace("modelled PCIe", "")  # the measured tables stay measured
    bills = pd.read_csv(io.StringIO(pack.csvs["modelled_preemptions.csv"]))
    assert len(bills) == len(record.last.preemptions) and f"bill ms (modelled {label})" in bills.columns
    other = run_pack(replace(record, target=Target(gpu="A100-80GB-SXM")))
    assert section(other, "modelled").title == "Modelled on A100-80GB-SXM + Llama-3.1-8B"


def test_the_zip_exports_real_images_where_chromium_runs(record):
    from pykv.review_pack.export import static_export_problem

    if problem := static_export_problem():
        pytest.skip(problem)
    grids = Figures(tuple(grid_figures(record.last, None, "g", "c")))  # the device pool's and the CPU pool's
    small = ReviewPack("t", "s", (Section("grids", "Grids", (grids,)),))
    z = zipfile.ZipFile(io.BytesIO(build_zip(small)))
    assert z.read("figures/g-gpu.svg").startswith(b"<svg") and z.read("figures/g-cpu.png").startswith(b"\x89PNG")


def test_without_static_export_the_zip_says_so_and_keeps_the_rest(pack, monkeypatch):
    def unavailable(*args, **kwargs):
        raise ExportUnavailable("SVG/PNG export needs Chromium (apt-get install chromium)")

    monkeypatch.setattr(bundle, "export_image", unavailable)
    z = zipfile.ZipFile(io.BytesIO(build_zip(pack)))
    assert not [n for n in z.namelist() if n.startswith("figures/")]
    assert {"review.html", "requests.csv", "preemptions.csv"} <= set(z.namelist())
    readme = z.read("README.txt").decode()
    assert "NO SVG/PNG FIGURES" in readme and "apt-get install chromium" in readme


def test_lesson_narration_is_escaped_and_links_stay_text():
    out = markdown_html("A **bold** `<b>` move, *see* [docs](https://example.com)\n\n- one\n- two\n\n```\nx < 1\n```")
    assert "<strong>bold</strong>" in out and "<code>&lt;b&gt;</code>" in out and "<em>see</em>" in out
    assert "<ul><li>one</li><li>two</li></ul>" in out and "<pre>x &lt; 1</pre>" in out
    assert "<a " not in out and "href" not in out


# ---- the CLI -------------------------------------------------------------------------------------------


def cli_args(
    model: Path,
    out: Path,
    *extra: str,
    workload: tuple[str, ...] = ("storm", "--num-requests", "3", "--max-tokens", "8"),
) -> list[str]:
    return [
        "report",
        "--model",
        str(model),
        "--workload",
        *workload,
        "--num-gpu-blocks",
        "24",
        "--block-size",
        "8",
        "--out",
        str(out),
        *extra,
    ]


def one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    return lines[0]


def test_cli_writes_the_page_and_exits_0(random_llama_path, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PYKV_PUBLIC_URL", raising=False)
    out = tmp_path / "review.html"
    assert main(cli_args(random_llama_path, out, "--vllm-profile", "v0.6")) == 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "vLLM 0.6.3.post1" in text and "?preset=storm" in text
    assert "set PYKV_PUBLIC_URL to the lab" in text  # no address known: the link stays relative, and says so
    assert f"wrote {out}" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["review.html"]  # no temporary file left


def test_cli_links_under_pykv_public_url(random_llama_path, tmp_path, monkeypatch):
    monkeypatch.setenv("PYKV_PUBLIC_URL", "https://lab.example.org/")
    out = tmp_path / "review.html"
    assert main(cli_args(random_llama_path, out, "--max-steps", "3")) == 0
    link = "https://lab.example.org/?preset=storm&amp;step=3&amp;"
    assert f'<pre class="link"><a href="{link}' in out.read_text()


def test_cli_max_steps_writes_the_steps_run_and_says_the_run_was_cut(random_llama_path, tmp_path, capsys):
    out = tmp_path / "review.html"
    assert main(cli_args(random_llama_path, out, "--max-steps", "3")) == 0
    assert "The run stopped after --max-steps 3 with requests unfinished" in out.read_text()
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "--max-steps 3" in warnings[0]


def test_cli_zip_without_static_export_is_one_line_and_writes_nothing(random_llama_path, tmp_path, capsys, monkeypatch):
    def unavailable(*args, **kwargs):
        raise ExportUnavailable("SVG/PNG export: the browser did not start")

    monkeypatch.setattr(bundle, "export_image", unavailable)
    out = tmp_path / "review.zip"
    assert main(cli_args(random_llama_path, out)) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "browser did not start" in errors[0]


def test_the_zip_without_static_export_still_builds_with_the_note(random_llama, random_llama_path, monkeypatch):
    """The app's button still offers the zip (page, CSVs, snapshot) and says in it why the images are missing."""

    def unavailable(*args, **kwargs):
        raise ExportUnavailable("SVG/PNG export: the browser did not start")

    monkeypatch.setattr(bundle, "export_image", unavailable)
    lab = Lab(EngineConfig(model=str(random_llama_path), num_gpu_blocks=24), loaded=random_llama)
    lab.goto(5)
    pack = run_pack(record_from_lab(lab, preset="storm", preset_args={}, seed=0))
    data, problem = bundle.bundle(pack, render_html(pack))
    z = zipfile.ZipFile(io.BytesIO(data))
    assert "browser did not start" in problem
    assert "NO SVG/PNG FIGURES" in z.read("README.txt").decode() and "review.html" in z.namelist()


def test_cli_bad_input_is_one_line_and_writes_nothing(random_llama_path, tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"name": "empty", "requests": []}))
    out = tmp_path / "out" / "review.html"
    out.parent.mkdir()
    cases = [
        ((str(empty),), (), "requests"),  # a run with no request
        (("storm",), ("--max-steps", "0"), "--max-steps 0 is out of range"),
        (("nope",), (), "does not exist"),
        (("storm",), ("--num-gpu-blocks", "0"), "--num-gpu-blocks"),
    ]
    for workload, extra, words in cases:
        assert main(cli_args(random_llama_path, out, *extra, workload=workload)) == 2, extra
        assert words in one_error(capsys), extra
    for bad_out, words in (
        (tmp_path / "missing" / "r.html", "does not exist"),
        (tmp_path, "is a folder"),
        (tmp_path / "r.txt", "name an .html file"),
    ):
        assert main(cli_args(random_llama_path, bad_out)) == 2
        assert words in one_error(capsys)
    assert not list(out.parent.iterdir()) and not (tmp_path / "r.txt").exists()


def test_cli_failure_while_writing_leaves_no_file(random_llama_path, tmp_path, capsys, monkeypatch):
    import pykv.review_pack as review_pack

    out = tmp_path / "review.html"

    def broken(pack):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(review_pack, "render_html", broken)
    assert main(cli_args(random_llama_path, out)) == 1
    assert "disk on fire" in one_error(capsys)
    assert not list(tmp_path.iterdir())

    def rename_fails(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.undo()
    monkeypatch.setattr(os, "replace", rename_fails)
    code = main(cli_args(random_llama_path, out))
    monkeypatch.undo()
    assert code == 1 and "No space left" in one_error(capsys)
    assert not list(tmp_path.iterdir())  # the temporary file went too


def test_cli_keeps_the_engines_log_lines_off_the_terminal_and_in_the_pack(random_llama_path, tmp_path, caplog):
    out = tmp_path / "review.html"
    caplog.set_level(logging.INFO)
    assert main(cli_args(random_llama_path, out, "--log-stats-interval", "2")) == 0
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("pykv")]
    assert not any("Avg prompt throughput" in m or "preempted" in m.lower() for m in logged), logged[:5]
    assert "Avg prompt throughput" in out.read_text()


def test_cli_report_help_opens_with_what_it_does(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert "Run a workload and write its review pack" in capsys.readouterr().out
