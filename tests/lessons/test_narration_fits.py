"""Narration that fits the projector and matches the views: at most ~70 words on screen per step (the rest
folds away), a view named in a tab is the step's ``focus`` (its tab opens), a CPU pool is only talked about
where the lesson has one, and every request a narration names exists in the lesson by then."""

from __future__ import annotations

import re

import pytest

from pykv.lessons import load_course
from pykv.lessons.step_blocks import AddRequest, Configure
from pykv.ui.views.lesson_text import PROJECTOR_WORDS, projector_split

COURSE = load_course()
STEPS = [(lesson, i) for lesson in COURSE for i in range(len(lesson.steps))]
IDS = [f"{lesson.id}:{i + 1}" for lesson, i in STEPS]
TAB_PHRASES = {  # what a narration calls a view that sits in a tab -> the focus that opens it
    r"requests table": "requests",
    r"(preemption-)?cost table": "costs",
    r"log panel": "log",
}
CPU_POOL_KNOBS = ("swap_space", "num_cpu_blocks", "kv_offloading_size", "num_offload_blocks")


def test_split_keeps_whole_paragraphs_and_fences():
    text = "One two three.\n\n```\na b c d e f\n\ng h\n```\n\nLast paragraph here."
    assert projector_split(text, words=20) == (text, "")
    shown, rest = projector_split(text, words=5)
    assert shown == "One two three." and rest.startswith("```") and rest.endswith("Last paragraph here.")


def test_a_long_first_paragraph_is_cut_after_a_sentence():
    text = " ".join(f"Sentence {i} has five words." for i in range(30))
    shown, rest = projector_split(text, words=12)
    assert shown == "Sentence 0 has five words. Sentence 1 has five words." and rest.startswith("Sentence 2 ")


@pytest.mark.parametrize("lesson, index", STEPS, ids=IDS)
def test_the_projector_shows_at_most_70_words_and_loses_none(lesson, index):
    narration = lesson.steps[index].narration
    shown, rest = projector_split(narration)
    assert len(shown.split()) <= PROJECTOR_WORDS
    assert shown.split() + rest.split() == narration.split()


@pytest.mark.parametrize("lesson, index", STEPS, ids=IDS)
def test_a_view_in_a_tab_is_the_steps_focus(lesson, index):
    step = lesson.steps[index]
    named = {focus for phrase, focus in TAB_PHRASES.items() if re.search(phrase, step.narration, re.I)}
    if named:
        assert step.focus in named, f"the narration reads the {' / '.join(named)} tab: add ```focus {named.pop()}"


@pytest.mark.parametrize("lesson, index", STEPS, ids=IDS)
def test_a_cpu_pool_is_only_talked_about_where_there_is_one(lesson, index):
    step = lesson.steps[index]
    if not re.search(r"(?<!no )\bCPU (swap )?pool\b|(?<!no )\bCPU tier\b", step.narration):
        return
    config = dict(lesson.config)
    for earlier in lesson.steps[: index + 1]:
        for action in earlier.actions:
            if isinstance(action, Configure):
                config |= action.changes
    assert any(config.get(knob) for knob in CPU_POOL_KNOBS) or config.get("preemption_mode") in ("swap", "auto"), (
        "the narration talks about a CPU pool the engine does not have at this step"
    )


@pytest.mark.parametrize("lesson, index", STEPS, ids=IDS)
def test_every_request_named_exists_by_then(lesson, index):
    known = {r.request_id for r in lesson.build_workload().requests}
    for earlier in lesson.steps[: index + 1]:
        known |= {a.request_id for a in earlier.actions if isinstance(a, AddRequest) and a.request_id}
    text = re.sub(r"\{\{.*?\}\}", "", lesson.steps[index].narration)
    named = set(re.findall(r"\b(?:request|req) \*\*([^*\s]+)\*\*", text))  # "request **b**"
    named |= set(re.findall(r"\*\*([a-z]|[0-9]{1,2})\*\*", text))  # a bold one-letter (or number) name
    assert named <= known, f"names {sorted(named - known)}, which the lesson never defines (it has {sorted(known)})"
