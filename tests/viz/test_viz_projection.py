"""The projector's 1080p figures (pykv.viz.projection): every pixel quantity of a 720p figure times the scale, the
layout in data and paper units as it was, the figure it came from untouched; the queue chart's badge key, given
the projector column's width, shortens or wraps instead of running past the edge; and every text of every figure
the projector draws is at least the back row's floor."""

from __future__ import annotations

import re

import pytest
from hand_made import request, snapshot

from pykv.viz import answers_figure, block_grid_figure, queues_figure, token_diff_figure
from pykv.viz.projection import PROJECTOR_SCALE, PROJECTOR_TEXT_PX, projected
from pykv.viz.queues import MAX_CHIPS
from pykv.viz.side_runs import side_runs_figure
from pykv.viz.theme import text_px


def sizes(fig) -> dict:
    spec = fig.to_plotly_json()
    layout = spec["layout"]
    return {
        "height": layout["height"],
        "margin": layout["margin"],
        "template font": layout["template"]["layout"]["font"]["size"],
        "title font": layout["template"]["layout"]["title"]["font"]["size"],
        "cell text": next(t["textfont"]["size"] for t in spec["data"] if "textfont" in t),
        "outlines": [s["line"]["width"] for s in layout.get("shapes", [])],
        "legend font": layout["annotations"][0]["font"]["size"],
        "legend shift": layout["annotations"][0]["yshift"],
    }


def test_a_projected_figure_is_the_same_figure_larger(snap):
    grid = block_grid_figure(snap, "gpu", {("gpu", 0)}, height=270)
    before = sizes(grid)
    big = projected(grid)
    x = PROJECTOR_SCALE
    assert 1.2 <= x <= 1.5  # 1080p over 720p is 1.5
    assert sizes(grid) == before  # pure
    after = sizes(big)
    assert after["height"] == round(270 * x)
    assert after["margin"] == {k: v * x for k, v in before["margin"].items()}
    for field in ("template font", "title font", "cell text", "legend font", "legend shift"):
        assert after[field] == pytest.approx(before[field] * x), field
    assert before["outlines"] and after["outlines"] == [w * x for w in before["outlines"]]
    spec, big_spec = grid.to_plotly_json(), big.to_plotly_json()
    assert [t.get("x") for t in big_spec["data"]] == [t.get("x") for t in spec["data"]]  # the cells stay put
    assert big_spec["layout"]["xaxis"]["range"] == spec["layout"]["xaxis"]["range"]
    assert [a["text"] for a in big_spec["layout"]["annotations"]] == [a["text"] for a in spec["layout"]["annotations"]]


def test_the_badge_key_keeps_to_a_narrow_column(snap):
    def key(fig):
        return fig.layout.annotations[-1].text

    assert "<br>" not in key(queues_figure(snap))  # width unknown: one line, as before
    assert "<br>" not in key(queues_figure(snap, width=600))
    assert "<br>" not in key(queues_figure(snap, width=270))  # the key has the figure's whole width, lane names too
    narrow = queues_figure(snap, width=230)  # a learner's
    assert key(narrow) == "R2 = 2 recomputes, S1 = 1 swap"  # one line, the lanes keep the height
    assert narrow.layout.margin.b == queues_figure(snap).layout.margin.b
    narrowest = queues_figure(snap, width=160)
    assert key(narrowest) == "badges: R2 = recomputed 2×,<br>S1 = swapped 1×"
    assert narrowest.layout.margin.b > queues_figure(snap).layout.margin.b  # room for its second line
    assert "<br>" not in key(queues_figure(snap, width=270, floor_px=14))  # the projector's: one line at 14 px


SMALL_MARKUP = re.compile(r"<(sup|sub|small)\b|font-size", re.IGNORECASE)  # plotly draws it smaller than its font


def text_sizes(fig) -> list[tuple[str, float]]:
    """(what, px) for every text ``fig`` draws, plotly's defaults resolved as plotly.js resolves them: a text with
    no font size of its own has the layout's (else the template's), a subtitle 70% of its title, text in <sup>,
    <sub> or <small> 70% of its font; a bar's text plotly may shrink to fit counts at the least size
    ``uniformtext`` lets it (0 where nothing stops it)."""
    spec = fig.to_plotly_json()
    layout, found = spec["layout"], []
    template = layout.get("template", {}).get("layout", {})

    def size(font, fallback):
        return (font or {}).get("size") or fallback

    def add(what, text, px):
        if text:
            found.append((what, px * (0.7 if SMALL_MARKUP.search(str(text)) else 1)))

    base = size(layout.get("font"), size(template.get("font"), 12))
    title = layout.get("title") or {}
    title_px = size(title.get("font"), size((template.get("title") or {}).get("font"), base))
    add("title", title.get("text"), title_px)
    subtitle = title.get("subtitle") or {}
    add("subtitle", subtitle.get("text"), size(subtitle.get("font"), round(title_px * 0.7)))
    for note in layout.get("annotations", []):
        add(f"annotation {note['text'][:20]!r}", note["text"], size(note.get("font"), base))
    drawn = {axis for t in spec["data"] for axis in (t.get("xaxis", "x"), t.get("yaxis", "y"))}  # "x", "y2", ...
    for name in {f"{a[0]}axis{a[1:]}" for a in drawn} | {k for k in layout if re.fullmatch(r"[xy]axis\d*", k)}:
        axis = layout.get(name, {})
        if axis.get("visible") is False:
            continue
        if axis.get("showticklabels", True):
            add(f"{name} ticks", "ticks", size(axis.get("tickfont"), base))
        add(f"{name} title", (axis.get("title") or {}).get("text"), size((axis.get("title") or {}).get("font"), base))
    for trace in spec["data"]:
        if trace.get("text") is None or not (trace["type"] == "bar" or "text" in trace.get("mode", "")):
            continue
        px = size(trace.get("textfont"), base)
        found.append((f"{trace.get('name')} text", min(px) if isinstance(px, list) else px))
        if trace["type"] == "bar":
            shrink = layout.get("uniformtext") or {}
            found.append((f"{trace.get('name')} text shrunk", shrink.get("minsize", 0) if shrink.get("mode") else 0))
    return found


RUNS = {"roomy": {"preemptions": 0, "recomputed_tokens": 0, "wall_s": 0.32}, "tight": {}}
RUNS["tight"] = {"preemptions": 3, "recomputed_tokens": 640, "wall_s": 1.2}


def projector_figures(snap, floor_px: float | None) -> dict:
    """The figures the projector draws, at the widths and heights it draws them at 1280x720 (follower_views,
    lesson_text, lesson_tokens, predict_panel)."""
    return {
        "pool": block_grid_figure(snap, "gpu", {("gpu", 0)}, height=270, width=340, floor_px=floor_px),
        "queues": queues_figure(snap, changed={"1"}, height=235, width=270, floor_px=floor_px),
        "side runs": side_runs_figure(list(RUNS), RUNS, "cpu", width=340, floor_px=floor_px),
        "token diff": token_diff_figure(
            list(range(40)), list(range(20)) + [99] * 20, block_size=4, width=650, floor_px=floor_px
        ),
        "room's answers": answers_figure(["3", "4", "5"], {"3": 2, "4": 9}, "4", height=112, floor_px=floor_px),
        "no answers yet": answers_figure(["a", "b"], {}, None, height=88, floor_px=floor_px),
    }


def test_every_text_the_projector_draws_reaches_the_back_row(snap):
    """The back row reads 14 px at 1280x720 and 18 at 1920x1080 (testkit.projector.FLOOR_PX): every projector
    figure built with PROJECTOR_TEXT_PX draws no text under 14 px, and projected for 1080p none under 18 (legends,
    cell numbers, chip ids and badges, the queue key, ticks, subtitles were 9-12 px and 13-17 px)."""
    assert PROJECTOR_TEXT_PX >= 14 and PROJECTOR_TEXT_PX * PROJECTOR_SCALE >= 18
    for name, fig in projector_figures(snap, PROJECTOR_TEXT_PX).items():
        sizes = text_sizes(fig)
        assert sizes and min(px for _, px in sizes) >= 14, (name, [s for s in sizes if s[1] < 14])
        big = text_sizes(projected(fig))
        assert min(px for _, px in big) >= 18, (name, [s for s in big if s[1] < 18])
    for name, fig in projector_figures(snap, None).items():  # the measure sees what the floor changed
        assert min(px for _, px in text_sizes(fig)) < 14, name


@pytest.mark.parametrize("width,floor_px", [(230, None), (270, PROJECTOR_TEXT_PX)])  # a learner's, the projector's
@pytest.mark.parametrize("waiting", [3, 20])
def test_a_queue_chip_holds_its_id_in_a_narrow_column(width, floor_px, waiting):
    """At 1280 px a learner's chips were 8 px slivers their letters spilled out of: twelve slots in a 230 px chart
    for three requests. A chip is wide enough for its id where the queue leaves room (a learner's long queue keeps
    every chip, up to MAX_CHIPS: the page can be hovered); on the projector always, a longer lane ending in
    "+N more"."""
    ids = [str(i) for i in range(waiting)]
    snap = snapshot([], [request(i, "waiting") for i in ids], queues={"waiting": ids, "running": [], "swapped": []})
    fig = queues_figure(snap, height=235, width=width, floor_px=floor_px)
    spec = fig.to_plotly_json()["layout"]
    low, high = spec["xaxis"]["range"]
    slot_px = (width - spec["margin"]["l"] - spec["margin"]["r"]) / (high - low)
    chips = [s for s in spec["shapes"] if s.get("xref") != "paper"]
    font = fig.data[0].textfont.size
    longest = max(len(t) for t in fig.data[0].text)
    notes = [a["text"] for a in spec["annotations"] if a["text"].startswith("+")]
    assert len(chips) + sum(int(n.split()[0]) for n in notes) == waiting  # every request shown or counted
    if floor_px is None and waiting > 10:
        assert len(chips) == MAX_CHIPS  # as many as ever: only the projector trades chips for their width
        return
    assert all((s["x1"] - s["x0"]) * slot_px >= text_px(longest, font) + 4 for s in chips)
    assert bool(notes) == (waiting > len(chips))
