"""Narration that fits the projector and matches the views: at most ~70 words on screen per step (the rest
folds away), cut where a reader can stop (a sentence's end, never "...into a slot:"), a view named in a tab
is the step's ``focus`` (its tab opens), a CPU pool is only talked about where the lesson has one, and every
request a narration names exists in the lesson by then.

One test per rule, over every step of the course: it fails with the list of every step that breaks the rule,
and a rule that only applies to some steps also fails when it applies to none (it would check nothing). The
last test shows each rule catching a hand-made step that breaks it."""

from __future__ import annotations

import re

from pykv.lessons import load_course, parse_lesson
from pykv.lessons.format.schema import Lesson
from pykv.lessons.format.step_blocks import AddRequest, Configure
from pykv.ui.views.panels.lesson_text import PROJECTOR_WORDS, ROOM_CHART_WORDS, ends_a_sentence, projector_split

COURSE = load_course()
TAB_PHRASES = {  # what a narration calls a view that sits in a tab -> the focus that opens it
    r"requests table": "requests",
    r"(preemption-)?cost table": "costs",
    r"log panel": "log",
}
CPU_POOL_TALK = r"(?<!no )\bCPU (swap )?pool\b|(?<!no )\bCPU tier\b"
CPU_POOL_KNOBS = ("swap_space", "num_cpu_blocks", "kv_offloading_size", "num_offload_blocks")


def where(lesson: Lesson, index: int) -> str:
    return f"{lesson.id}:{index + 1}"


def too_long(course: list[Lesson]) -> list[str]:
    """Steps whose projector part is over PROJECTOR_WORDS words, or whose split loses or adds a word."""
    offenders = []
    for lesson in course:
        for index, step in enumerate(lesson.steps):
            shown, rest = projector_split(step.narration)
            if len(shown.split()) > PROJECTOR_WORDS:
                offenders.append(f"{where(lesson, index)}: {len(shown.split())} words on the projector")
            if shown.split() + rest.split() != step.narration.split():
                offenders.append(f"{where(lesson, index)}: the projector split loses or changes words")
    return offenders


def cut_mid_sentence(course: list[Lesson]) -> list[str]:
    """Steps whose projector part stops mid-sentence or on an introduction (a colon), at both of the projector's
    budgets (a class projector gives some words up for the room's answers to a question)."""
    offenders = []
    for lesson in course:
        for index, step in enumerate(lesson.steps):
            budgets = [PROJECTOR_WORDS] + [PROJECTOR_WORDS - ROOM_CHART_WORDS] * (step.predict is not None)
            for words in budgets:
                shown, _ = projector_split(step.narration, words)
                if not ends_a_sentence(shown):
                    stop = shown[-40:].strip()
                    offenders.append(f"{where(lesson, index)}: the projector stops at {stop!r} ({words} words)")
    return offenders


def unfocused_tabs(course: list[Lesson]) -> tuple[int, list[str]]:
    """(how many steps name a view in a tab, the steps among them whose focus does not open that tab)."""
    checked, offenders = 0, []
    for lesson in course:
        for index, step in enumerate(lesson.steps):
            named = {focus for phrase, focus in TAB_PHRASES.items() if re.search(phrase, step.narration, re.I)}
            if not named:
                continue
            checked += 1
            if step.focus not in named:
                views = " / ".join(sorted(named))
                offenders.append(f"{where(lesson, index)}: reads the {views} tab: add ```focus {min(named)}")
    return checked, offenders


def pool_config(lesson: Lesson, index: int) -> dict:
    """The lesson's config as of step ``index`` (its configure actions so far applied)."""
    config = dict(lesson.config)
    for earlier in lesson.steps[: index + 1]:
        for action in earlier.actions:
            if isinstance(action, Configure):
                config |= action.changes
    return config


def pools_not_there(course: list[Lesson]) -> tuple[int, list[str]]:
    """(how many steps talk about a CPU pool, the steps among them whose engine has none at that step)."""
    checked, offenders = 0, []
    for lesson in course:
        for index, step in enumerate(lesson.steps):
            if not re.search(CPU_POOL_TALK, step.narration):
                continue
            checked += 1
            config = pool_config(lesson, index)
            if not any(config.get(knob) for knob in CPU_POOL_KNOBS) and config.get("preemption_mode") not in (
                "swap",
                "auto",
            ):
                offenders.append(f"{where(lesson, index)}: talks about a CPU pool the engine does not have here")
    return checked, offenders


def unknown_requests(course: list[Lesson]) -> list[str]:
    """Steps whose narration names a request (``request **b**``, a bold one-letter or number name) that the
    lesson has not defined by then."""
    offenders = []
    for lesson in course:
        known = {r.request_id for r in lesson.build_workload().requests}
        for index, step in enumerate(lesson.steps):
            known |= {a.request_id for a in step.actions if isinstance(a, AddRequest) and a.request_id}
            text = re.sub(r"\{\{.*?\}\}", "", step.narration)
            named = set(re.findall(r"\b(?:request|req) \*\*([^*\s]+)\*\*", text))  # "request **b**"
            named |= set(re.findall(r"\*\*([a-z]|[0-9]{1,2})\*\*", text))  # a bold one-letter (or number) name
            if named - known:
                offenders.append(
                    f"{where(lesson, index)}: names {sorted(named - known)}, which the lesson never defines "
                    f"(it has {sorted(known)})"
                )
    return offenders


def test_split_keeps_whole_paragraphs_and_fences():
    text = "One two three.\n\n```\na b c d e f\n\ng h\n```\n\nLast paragraph here."
    assert projector_split(text, words=20) == (text, "")
    shown, rest = projector_split(text, words=5)
    assert shown == "One two three." and rest.startswith("```") and rest.endswith("Last paragraph here.")


def test_a_long_first_paragraph_is_cut_after_a_sentence():
    text = " ".join(f"Sentence {i} has five words." for i in range(30))
    shown, rest = projector_split(text, words=12)
    assert shown == "Sentence 0 has five words. Sentence 1 has five words." and rest.startswith("Sentence 2 ")


def test_an_introduction_goes_with_what_it_introduces():
    text = "First sentence here.\n\nThe runner turns a position into a slot:\n\n```text\na b c d e f g h\n```\n\nLast."
    shown, rest = projector_split(text, words=10)
    assert shown == "First sentence here." and rest.startswith("The runner turns") and ends_a_sentence(shown)
    assert projector_split(text, words=40) == (text, "")


def test_a_long_first_paragraph_never_ends_on_its_colon():
    text = "One two three four. Five six seven eight nine: " + " ".join(["w"] * 20) + "."
    shown, rest = projector_split(text, words=12)
    assert shown == "One two three four." and rest.startswith("Five six")
    assert not ends_a_sentence("One two three four. Five six seven eight nine:")
    assert not ends_a_sentence("The block table is what makes that")


def test_a_long_first_list_is_cut_after_an_item_or_a_sentence():
    items = "- " + "One item of six words." + "\n- " + " ".join(["x"] * 30) + "."
    assert projector_split(items, words=12) == ("- One item of six words.", "- " + " ".join(["x"] * 30) + ".")
    long_item = "- First of two. " + " ".join(["Y"] * 30) + ".\n- Second item."
    shown, rest = projector_split(long_item, words=12)
    assert shown == "- First of two." and rest.endswith("- Second item.") and ends_a_sentence(shown)


def test_the_course_has_steps_to_check():
    assert sum(len(lesson.steps) for lesson in COURSE) > 0


def test_the_projector_shows_at_most_70_words_and_loses_none():
    assert too_long(COURSE) == []


def test_the_projector_stops_at_a_sentence_end_on_every_step():
    assert cut_mid_sentence(COURSE) == []


def test_a_view_in_a_tab_is_the_steps_focus():
    checked, offenders = unfocused_tabs(COURSE)
    assert checked, "no narration names a view in a tab: this rule checks nothing (is TAB_PHRASES still right?)"
    assert offenders == []


def test_a_cpu_pool_is_only_talked_about_where_there_is_one():
    checked, offenders = pools_not_there(COURSE)
    assert checked, "no narration talks about a CPU pool: this rule checks nothing (is CPU_POOL_TALK still right?)"
    assert offenders == []


def test_every_request_named_exists_by_then():
    assert unknown_requests(COURSE) == []


BAD_LESSON = """\
---
id: bad
title: Bad narration
summary: Breaks every narration rule once.
seed: 0
config: {num_gpu_blocks: 16, block_size: 4, max_num_seqs: 4}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 4, ignore_eos: true}
---

## Too long

{words}.

## Stops on a colon

The runner turns every token position into a slot:

```text
{words}
```

## Reads a tab it does not open

The requests table shows **a** and its blocks.

## A pool that is not there

The CPU pool holds the victim's blocks.

## A request nobody added

Request **z** arrives.
"""


def test_each_rule_catches_a_step_that_breaks_it():
    bad = parse_lesson(BAD_LESSON.replace("{words}", " ".join(["word"] * (PROJECTOR_WORDS + 5))), "bad.md")
    assert too_long([bad]) == [f"bad:1: {PROJECTOR_WORDS + 5} words on the projector"]
    stop = "turns every token position into a slot:"
    assert cut_mid_sentence([bad]) == [f"bad:2: the projector stops at {stop!r} (70 words)"]
    assert unfocused_tabs([bad]) == (1, ["bad:3: reads the requests tab: add ```focus requests"])
    assert pools_not_there([bad]) == (1, ["bad:4: talks about a CPU pool the engine does not have here"])
    assert unknown_requests([bad]) == ["bad:5: names ['z'], which the lesson never defines (it has ['a'])"]
