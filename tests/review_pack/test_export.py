"""Figure export (pykv/review_pack/export.py): SVG / PNG through kaleido and Debian's Chromium, HTML with plotly.js
inside. Real renders are few (one figure, rendered once per format and scale it needs, ~0.3 s each
after a ~3 s browser start); failures are provoked without touching the shared browser."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import struct
import xml.etree.ElementTree as ET
import zlib

import plotly.graph_objects as go
import pytest

from pykv import EngineConfig
from pykv.cli.main import build_parser, config_from_args
from pykv.review_pack import export, fit
from pykv.review_pack.export import ExportUnavailable, export_figure, export_html, export_image, png_size
from pykv.review_pack.fit import fit_width, overflows
from pykv.viz.captions import config_summary, state_caption, sweep_caption, sweep_command
from pykv.viz.theme import LIGHT, figure, template

TITLE = "Export check · bars and cells"
CAPTION = (
    "pykv engine state after step 3 (preset storm) on cpu · model tiny · vLLM 0.6 rules (v0.6) · 32 blocks × 16 "
    "tokens · max_num_seqs 8 · budget 256 tokens/step · preemption swap (16 CPU blocks)"
)
LINK = "?preset=storm&step=3&num_gpu_blocks=32&vllm_profile=v0.6"
WIDTH = 640


def make_figure(dark: bool = False) -> go.Figure:
    data = [
        dict(type="bar", x=["a", "b", "c"], y=[3, 1, 2], name="bars"),
        dict(type="heatmap", z=[[0, 1], [1, 0]], x0=2.5, y0=0, showscale=False, name="cells"),
    ]
    return figure(TITLE, 300, dark, data, subtitle="its own subtitle", margin=dict(l=40, r=8, t=60, b=30))


@pytest.fixture(scope="module")
def fig() -> go.Figure:
    return make_figure()


@pytest.fixture(scope="module")
def svgs(fig) -> tuple[bytes, bytes]:
    return tuple(export_image(fig, "svg", caption=CAPTION, link=LINK, width=WIDTH) for _ in range(2))


@pytest.fixture(scope="module")
def pngs(fig) -> dict[int, bytes]:
    return {s: export_image(fig, "png", scale=s, caption=CAPTION, link=LINK, width=WIDTH) for s in (1, 2, 3)}


def svg_text(svg: bytes) -> str:
    root = ET.fromstring(svg)
    return " ".join("".join(el.itertext()) for el in root.iter() if el.tag.endswith("}text"))


# ---- the exported figure (no browser) ------------------------------------------------------------------


def test_the_export_is_a_light_captioned_copy_and_the_figure_is_untouched():
    dark = make_figure(dark=True)
    before = json.loads(dark.to_json())
    out = export_figure(dark, caption=CAPTION, link=LINK, width=WIDTH)
    assert json.loads(dark.to_json()) == before  # the caller's figure is not changed
    assert out.layout.template.layout.paper_bgcolor == template(False).layout.paper_bgcolor == LIGHT["paper"]
    subtitle = out.layout.title.subtitle.text
    assert subtitle.startswith("its own subtitle<br>") and "link: ?preset=storm&amp;step=3" in subtitle
    assert out.layout.width == WIDTH and out.layout.height > 300 and out.layout.title.text == TITLE
    assert [t.uid for t in out.data] == ["trace0", "trace1"]  # no random ids for plotly.js to make up


def crowded_figure() -> go.Figure:
    """A figure laid out for the app's wide column: a long title and subtitle, a legend of long names beside it."""
    data = [
        dict(type="scatter", x=[1, 2], y=[1, 2], name="recompute, modelled H100-SXM + Llama-3.1-8B"),
        dict(type="scatter", x=[1, 2], y=[2, 1], name="swap, modelled PCIe Gen5"),
        dict(type="scatter", x=[1, 2], y=[1, 1], name="swap, measured"),
    ]
    return figure(
        "Cost of one preemption vs the victim's sequence length: recompute and swap measured, PCIe modelled.",
        400,
        False,
        data,
        margin=dict(l=72, r=8, t=96, b=52),
        subtitle="Filled points: measured on cpu.<br>Dashed (Gen5) / dotted (Gen4) lines, hollow "
        "markers: the same swaps' bytes and copies modelled across PCIe, not measured.",
    )


def test_a_figure_is_fitted_to_a_narrow_width_and_left_alone_where_it_fits():
    fig = crowded_figure()
    before = json.loads(fig.to_json())
    assert overflows(fig, 500)  # as the app draws it: title, subtitle and legend run past 500 px
    out = fit_width(fig, 500)
    assert json.loads(fig.to_json()) == before and overflows(out, 500) == []
    title_lines = out.layout.title.text.count("<br>") + 1
    assert title_lines == 2 and out.layout.title.subtitle.text.count("<br>") >= 2
    assert out.layout.title.pad.t == fit.TITLE_PAD_PX + 14 * fit.LINE_EM  # plotly.js tops n lines as if one
    assert out.layout.legend.orientation == "h" and out.layout.legend.yref == "container"  # under the plot, in rows
    assert out.layout.height > 400 and out.layout.margin.b > 52 and out.layout.margin.t >= 96  # the plot keeps room
    wide = fit_width(fig, 2000)
    assert wide.layout.legend.orientation is None and wide.layout.title.text == fig.layout.title.text
    # where it fits, only the empty band above the plot goes (its 96 px margin held a title and two subtitle lines)
    assert wide.layout.height - wide.layout.margin.t == 400 - 96 and wide.layout.margin.t < 96


def test_an_export_is_fitted_to_its_width_and_a_long_link_breaks_only_between_parameters():
    link = "?" + "&".join(f"knob_{i}=value_{i}" for i in range(12))
    out = export_figure(crowded_figure(), caption=CAPTION, link=link, width=500)
    assert overflows(out, 500) == []
    lines = export.caption_lines(CAPTION, link, 500)
    tail = [line for line in lines if "knob_" in line]
    assert len(tail) > 1 and all(line.startswith("&amp;knob_") for line in tail[1:])
    assert "".join(tail).replace("&amp;", "&") == f"link: {link}"
    assert export.caption_lines(CAPTION, LINK, WIDTH)[-1] == f"link: {LINK}".replace("&", "&amp;")  # a short one whole


def test_svg_ids_are_renumbered_in_order_with_their_references():
    svg = (
        b'<svg><defs id="defs-ab12cd"><clipPath id="clipab12cdxy"/><clipPath id="clipab12cdx"/></defs>'
        b'<g clip-path="url(#clipab12cdxy)" style="fill: url(&quot;#clipab12cdx&quot;)"><use href="#defs-ab12cd"/>'
        b"</g><text>#clipab12cdxyz is not a reference</text></svg>"
    )
    out = export.normalise_svg(svg).decode()
    assert re.findall(r'id="([^"]+)"', out) == ["pykv0", "pykv1", "pykv2"]
    assert "url(#pykv1)" in out and "url(&quot;#pykv2&quot;)" in out and 'href="#pykv0"' in out
    assert "#clipab12cdxyz" in out and "ab12cd" not in out.replace("#clipab12cdxyz", "")


def test_png_text_and_time_chunks_are_dropped():
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 0, 0, 0, 0))
    rest = chunk(b"IDAT", zlib.compress(b"\x00\x00\x00")) + chunk(b"IEND", b"")
    meta = chunk(b"tIME", b"\x07\xea\x01\x01\x00\x00\x00") + chunk(b"tEXt", b"a\x00b")
    png = b"\x89PNG\r\n\x1a\n" + ihdr + meta + rest
    assert export.normalise_png(png) == b"\x89PNG\r\n\x1a\n" + ihdr + rest
    assert png_size(png) == (2, 1)


def test_html_needs_no_network_and_is_deterministic(fig):
    page = export_html(fig, caption=CAPTION, link=LINK)
    assert page == export_html(fig, caption=CAPTION, link=LINK)
    text = page.decode()
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", text, re.I)
    assert len(page) > 1_000_000 and "plotly.js" in text[:20_000]  # plotly.js itself is inside
    assert f"<title>{TITLE}</title>" in text and "budget 256 tokens" in text and "pykv-figure" in text


# ---- real renders ----------------------------------------------------------------------------------------


def test_svg_is_xml_with_the_title_caption_and_link(svgs):
    text = svg_text(svgs[0])
    assert TITLE in text and "its own subtitle" in text
    for word in ("pykv engine state after step 3", "max_num_seqs 8", "preemption swap (16 CPU blocks)"):
        assert word in text
    assert f"link: {LINK}" in text
    assert set(re.findall(r'\bid="([^"]+)"', svgs[0].decode())) <= {f"pykv{i}" for i in range(1000)}


def test_same_figure_same_bytes(svgs, pngs, fig):
    assert svgs[0] == svgs[1]
    assert pngs[1] == export_image(fig, "png", scale=1, caption=CAPTION, link=LINK, width=WIDTH)


def test_png_has_the_size_asked_for_at_each_scale(pngs, fig):
    height = export_figure(fig, caption=CAPTION, link=LINK, width=WIDTH).layout.height
    for scale, png in pngs.items():
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert png_size(png) == (WIDTH * scale, height * scale)


# ---- failures: one line, never a hang, HTML unaffected ---------------------------------------------------


def test_a_missing_browser_is_one_line_and_html_still_works(fig, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    problem = export.static_export_problem()
    assert problem and "/nonexistent/chromium" in problem and "\n" not in problem
    with pytest.raises(ExportUnavailable, match="no browser at /nonexistent/chromium") as e:
        export_image(fig, "svg", caption=CAPTION, link=LINK)
    assert "\n" not in str(e.value)
    assert export_html(fig, caption=CAPTION, link=LINK).startswith(b"<!doctype html>")


def test_a_browser_that_will_not_start_is_one_line_and_remembered(fig, monkeypatch):
    monkeypatch.setattr(export, "_BROWSER", export._Browser())  # the shared browser stays up for the others
    monkeypatch.setenv("BROWSER_PATH", "/bin/false")
    with pytest.raises(ExportUnavailable, match="did not start") as e:
        export_image(fig, "png", caption=CAPTION, link=LINK)
    assert "\n" not in str(e.value)
    assert export.static_export_problem() == str(e.value)  # the page disables the image buttons and says why


def test_a_render_that_hangs_times_out(fig, monkeypatch):
    class Hanging:
        async def calc_fig(self, *args, **kwargs):
            await asyncio.sleep(30)

        async def close(self):
            pass

    browser = export._Browser()
    browser._kaleido, browser._path = Hanging(), export.browser_path()
    monkeypatch.setattr(export, "_BROWSER", browser)
    with pytest.raises(ExportUnavailable, match="took longer than 0.5 s") as e:
        export_image(fig, "svg", caption=CAPTION, link=LINK, timeout_s=0.5)
    assert "\n" not in str(e.value) and browser._kaleido is None  # closed: the next export starts afresh


def test_kaleido_missing_is_one_line(fig, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "kaleido", None)  # import kaleido -> ImportError
    problem = export.static_export_problem()
    assert problem and "kaleido" in problem and "\n" not in problem
    with pytest.raises(ExportUnavailable, match="kaleido"):
        export_image(fig, "svg", caption=CAPTION)


# ---- captions ---------------------------------------------------------------------------------------------


def test_captions_name_the_config_device_and_what_is_measured():
    config = EngineConfig(
        vllm_profile="v0.6", num_gpu_blocks=32, preemption_mode="swap", num_cpu_blocks=16, enable_prefix_caching=True
    )
    summary = config_summary(config)
    for part in (
        "vLLM 0.6",
        "v0.6",
        "32 blocks × 16 tokens",
        "max_num_seqs 8",
        "budget 256 tokens/step",
        "preemption swap (16 CPU blocks)",
        "prefix caching",
    ):
        assert part in summary
    assert state_caption(config, "cuda:0", preset="storm", step=7, manual_requests=1).startswith(
        "pykv engine state after step 7 (preset storm + 1 request(s) added by hand) on cuda:0"
    )
    caption = sweep_caption(
        config,
        "cpu",
        workload="storm",
        workload_args={"n": 4},
        axis="num_gpu_blocks",
        values=(24, 60),
        series=("recompute, vLLM 0.6.3 (V0)", "swap, vLLM 0.6.3 (V0)"),
        runs=3,
        total=4,
        repeats=3,
        load="1.20–3.40",
    )
    assert "stopped: 3 of 4 points" in caption and "measured on cpu" in caption and "modelled" in caption
    assert "series recompute, vLLM 0.6.3 (V0); swap, vLLM 0.6.3 (V0)" in caption  # each series names its release
    assert "(CPU time of the engine thread, median of 3 repeats; load average 1.20–3.40)" in caption
    assert "counts are the same every repeat" in caption


@pytest.mark.parametrize(
    "axis, values, modes",
    [
        ("num_gpu_blocks", (24, 60), ("recompute", "swap")),
        ("block_size", (4, 8), ("recompute", "swap per-block")),
        ("num_gpu_blocks", (24,), ("recompute", "recompute@v0.33")),
    ],
)
@pytest.mark.parametrize("profile", ["v0.6", "v0.33"])  # the sweep's default release is not the engine's
def test_the_sweep_command_reruns_the_same_sweep(axis, values, modes, profile):
    base = EngineConfig(
        vllm_profile=profile,
        model="/some path/ckpt",
        block_size=4 if axis != "block_size" else 16,
        max_num_seqs=16,
        num_gpu_blocks=48 if axis != "num_gpu_blocks" else 64,
        enable_chunked_prefill=False,
    )
    across = any("@" in m for m in modes)
    command = sweep_command(
        base,
        workload="storm",
        workload_args={"n": 4, "max_tokens": 16},
        axis=axis,
        values=values,
        modes=modes,
        seed=3,
        repeats=5,
        across_releases=across,
    )
    assert command.startswith("python -m pykv sweep ")
    args = build_parser().parse_args(shlex.split(command)[3:])  # past "python -m pykv"
    assert config_from_args(args) == base.replace(seed=3)
    flag = {"num_gpu_blocks": args.pool_sizes, "block_size": args.block_sizes}[axis]
    assert flag == ",".join(map(str, values)) and tuple(args.modes.split(",")) == modes
    assert (args.workload, args.num_requests, args.max_tokens, args.seed) == ("storm", 4, 16, 3)
    assert (args.repeats, args.compare_across_releases, args.vllm_profile) == (5, across, profile)
