"""What the review-pack tests share (unit and browser): a small pool sweep priced on the default GPU target as the
Sweep page prices it, a pack's sections and visible text, and the check that every figure fits its width."""

from __future__ import annotations

import re

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")  # 1e+03 in a table cell


def section(pack, sid: str):
    return next(s for s in pack.sections if s.id == sid)


def section_html(html: str, sid: str) -> str:
    start = html.index(f'<section id="{sid}">')
    return html[start : html.index("</section>", start)]


def visible_text(fragment: str) -> str:
    """A fragment's text as a reader sees it: no scripts (a figure's data), no tags."""
    return re.sub(r"<[^>]+>", " ", re.sub(r"(?s)<script.*?</script>", "", fragment))


def priced_pool_sweep(loaded, model_path):
    """(spec, priced result, estimate) of 2 pools x (recompute, swap) under v0.6, each point twice, on ``loaded``
    (block size 4)."""
    from pykv.border.config import EngineConfig
    from pykv.gpu_model import DEFAULT_TARGET
    from pykv.lab.sweep import SweepSpec, iter_runs, sweep_result
    from pykv.ui.views.panels.sweep_modelled import with_modelled

    spec = SweepSpec(
        workload_args={"n": 4, "max_tokens": 16},
        values=(60, 90),
        modes=("recompute", "swap"),
        base=EngineConfig(model=str(model_path), block_size=4, vllm_profile="v0.6"),
        repeats=2,
    )
    rows, costs = [], []
    for row, c in iter_runs(spec, loaded):
        rows.append(row)
        costs.extend(c)
    estimate = DEFAULT_TARGET.estimate()
    return spec, with_modelled(sweep_result(rows, costs), rows, costs, estimate), estimate


def assert_fits(pack) -> None:
    """Every figure of ``pack``, as the page draws it and as the zip exports it, keeps its title, subtitle, legend and
    notes within its width (estimated from its layout: plotly never wraps, so a long line runs past the edge)."""
    import pykv.review_pack.bundle as bundle
    from pykv.review_pack.export import export_figure
    from pykv.review_pack.fit import fit_width, overflows
    from pykv.review_pack.page import figure_width

    for f in pack.figures():
        for width in {figure_width(f), bundle.export_width(f)}:
            assert overflows(fit_width(f.figure, width), width) == [], (f.name, width)
        exported = export_figure(f.figure, caption=f.caption, link=pack.link, width=bundle.export_width(f))
        assert overflows(exported, bundle.export_width(f)) == [], f.name
