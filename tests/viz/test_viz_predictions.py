"""The room's answers to a lesson prediction: a pure bar chart of hand-made counts (no Streamlit, no engine)."""

from __future__ import annotations

import pytest

from pykv.viz import template
from pykv.viz.predictions import RIGHT, TICK, WAITING, answers_figure
from pykv.viz.theme import DARK, LIGHT


def bars(fig):
    (bar,) = fig.data
    assert bar.type == "bar" and bar.orientation == "h"
    return bar


def test_one_bar_per_choice_in_the_lessons_order_with_its_count_as_text():
    fig = answers_figure(["a", "b", "c"], {"a": 3, "b": 1, "c": 12}, None)
    bar = bars(fig)
    assert list(bar.y) == ["a", "b", "c"] and list(bar.x) == [3, 1, 12]
    assert list(bar.text) == ["3", "1", "12"]
    assert fig.layout.yaxis.autorange == "reversed"  # the first choice on top, as the lesson lists them
    assert "16 answers" in fig.layout.title.subtitle.text and "not revealed" in fig.layout.title.subtitle.text


def test_before_the_reveal_every_bar_is_one_colour_and_nothing_is_ticked():
    bar = bars(answers_figure(["a", "b", "c"], {"a": 3, "b": 1, "c": 12}, None))
    assert set(bar.marker.color) == {WAITING}
    assert not any(TICK in t for t in bar.text)
    assert set(bar.marker.line.color) == {"rgba(0,0,0,0)"}


def test_the_reveal_highlights_the_right_choice_with_colour_tick_and_outline():
    fig = answers_figure(["a", "b", "c"], {"a": 3, "b": 1, "c": 12}, "b")
    bar = bars(fig)
    assert list(bar.marker.color) == [LIGHT["cached"], RIGHT, LIGHT["cached"]]
    assert list(bar.text) == ["3", f"1 {TICK}", "12"]  # colour is never the only cue
    assert list(bar.marker.line.color) == ["rgba(0,0,0,0)", LIGHT["outline"], "rgba(0,0,0,0)"]
    assert f"right answer: {TICK} b" in fig.layout.title.subtitle.text


def test_zero_counts_missing_choices_and_unknown_keys():
    bar = bars(answers_figure(["0", "1", "6", "13"], {"13": 4, "42": 9}, "0"))
    assert list(bar.x) == [0, 0, 0, 4]  # a choice nobody picked is a zero bar; a key that is no choice is ignored
    assert list(bar.text)[0] == f"0 {TICK}"  # the right answer may have no votes at all
    empty = answers_figure(["yes", "no"], {}, None)
    assert list(bars(empty).x) == [0, 0]
    assert empty.layout.annotations[0].text == "No answers yet."
    assert tuple(empty.layout.xaxis.range) == (0, 1) and empty.layout.xaxis.dtick == 1
    assert "0 answers" in empty.layout.title.subtitle.text


def test_whole_number_ticks_for_any_count():
    assert answers_figure(["a", "b"], {"a": 3}, None).layout.xaxis.dtick == 1
    assert answers_figure(["a", "b"], {"a": 40, "b": 7}, None).layout.xaxis.dtick == 10
    assert answers_figure(["a", "b"], {"a": 1, "b": 1}, None).layout.title.subtitle.text.startswith("2 answers")
    assert answers_figure(["a", "b"], {"a": 1}, None).layout.title.subtitle.text.startswith("1 answer ")


def test_dark_uses_the_dark_template_and_muted_colour():
    fig = answers_figure(["a", "b"], {"a": 2, "b": 5}, "a", dark=True)
    assert fig.layout.template == template(True)
    assert fig.layout.template.layout.paper_bgcolor == DARK["paper"]
    bar = bars(fig)
    assert list(bar.marker.color) == [RIGHT, DARK["cached"]]
    assert bar.marker.line.color[0] == DARK["outline"] and bar.textfont.color == DARK["font"]
    assert answers_figure(["a", "b"], {}, None).layout.template == template(False)


@pytest.mark.parametrize(
    "choices, counts, correct, words",
    [
        (["a", "a"], {}, None, "distinct"),
        (["a", "b"], {}, "c", "not one of the choices"),
        (["a", "b"], {"a": -1}, None, "negative"),
    ],
)
def test_bad_input_is_a_clear_value_error(choices, counts, correct, words):
    with pytest.raises(ValueError, match=words):
        answers_figure(choices, counts, correct)
