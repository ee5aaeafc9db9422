"""The cheat sheet: one self-contained printable page that names every knob of its table (derived from
EngineConfig's), links every lesson step it cites, and carries no script and no outside resource."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from pykv.border.config import knob_named, knobs
from pykv.border.vllm_profiles import PROFILES
from pykv.cheatsheet import cheatsheet_html, cited_lessons
from pykv.cheatsheet.content import KNOB_NOTES
from pykv.cheatsheet.page import first_clause, knob_releases, knob_rows, lab_only_knobs, unresolved_cites
from pykv.lessons.course.loader import read_course
from testkit.vllm_source import require_vllm_source


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def course():
    return read_course()[0]  # the lessons that load (a lesson in the making is another test's failure)


@pytest.fixture(scope="module")
def page(course):
    return cheatsheet_html(course)


def test_every_knob_note_names_a_knob_of_the_config_table():
    names = {k.name for k in knobs()}
    assert set(KNOB_NOTES) <= names, set(KNOB_NOTES) - names  # a renamed knob fails here, not silently on the page


def test_the_page_names_every_knob_of_its_table_and_every_knob_a_lesson_can_set(page):
    rows = knob_rows()
    assert [k.name for k, _ in rows] == [k.name for k in knobs() if k.name in KNOB_NOTES]  # the config's order
    for knob, note in rows:
        assert f"({knob.name})" in page and f"<code>{note.flag}</code>" in page, knob.name
    for knob in knobs("lesson"):
        assert knob.name in page, knob.name
    assert lab_only_knobs() and not set(lab_only_knobs()) & set(KNOB_NOTES)


def test_what_a_knob_does_and_its_releases_come_from_the_config_table():
    assert first_clause(knob_named("num_gpu_blocks").help) == "physical KV blocks in the device pool"
    assert first_clause("a (b; c); d") == "a (b; c)"
    assert knob_releases(knob_named("swap_space"), KNOB_NOTES["swap_space"]).startswith("0.6.3 ")  # profiles=v0.6
    assert knob_releases(knob_named("max_num_seqs"), KNOB_NOTES["max_num_seqs"]) == "all"
    offloading = knob_releases(knob_named("kv_offloading_size"), KNOB_NOTES["kv_offloading_size"])
    having = ", ".join(p.release for p in PROFILES.values() if p.has_kv_offloading)  # the profiles with the tier
    assert offloading == f"{having} (from 0.11.1; to 0.12 with --kv-offloading-backend native)"


def test_0_10_2_swaps_only_through_its_v0_fallback(page):
    """0.10.2 engine/arg_utils.py EngineArgs._is_v1_supported_oracle: a non-default --preemption-mode falls back to
    the V0 engine, which swaps; nothing in v1/ reads --swap-space. Never "accepted, unused"."""
    mode = knob_releases(knob_named("preemption_mode"), KNOB_NOTES["preemption_mode"])
    assert mode == "0.6.3 (0.10.2: any value falls back to V0, which swaps)"
    assert "V0 engine only" in knob_releases(knob_named("swap_space"), KNOB_NOTES["swap_space"])
    assert "sends it back to V0" in page and "unused" not in page


def test_every_cited_lesson_and_step_is_linked_by_id(course, page):
    assert not unresolved_cites(course), unresolved_cites(course)
    ids = {lesson.id for lesson in course}
    assert cited_lessons() <= ids
    parser = Tags()
    parser.feed(page)
    links = [attrs["href"] for tag, attrs in parser.tags if tag == "a"]
    linked = {re.search(r"[?&]lesson=([a-z0-9-]+)", href).group(1) for href in links}
    assert cited_lessons() <= linked
    for href in links:  # each link opens the cited step: lessons?lesson=ID&step=k, k within the lesson
        lesson_id, step = re.fullmatch(r"lessons\?lesson=([a-z0-9-]+)&step=(\d+)", href).groups()
        lesson = next(lesson for lesson in course if lesson.id == lesson_id)
        assert 1 <= int(step) <= len(lesson.steps)
    assert "&amp;step=" in page  # escaped in the attribute


def test_the_page_is_self_contained_printable_and_has_no_script(page):
    parser = Tags()
    parser.feed(page)
    tags = {tag for tag, _ in parser.tags}
    assert "script" not in tags and "<script" not in page.lower() and "javascript:" not in page.lower()
    assert not tags & {"img", "link", "iframe", "object", "embed"}
    assert not any(attr.startswith("on") for _, attrs in parser.tags for attr in attrs)
    assert "@page" in page and "@media print" in page and "@import" not in page and "url(" not in page
    assert page.startswith("<!DOCTYPE html>") and "Tuning order" in page and "Troubleshooting" in page


def test_links_follow_the_base_and_text_is_escaped(course):
    page = cheatsheet_html(course, link_base="https://lab.example/lessons")
    assert 'href="https://lab.example/lessons?lesson=' in page
    assert "<code>--max-num-seqs</code>" in page and "<b>" in page
    assert "`" not in re.sub(r"<style>.*?</style>", "", page, flags=re.S)  # every `code` span became <code>


def test_a_course_without_the_cited_lessons_still_renders_plain_citations():
    page = cheatsheet_html([])
    assert "tuning-in-order" in page and "href=" not in page


def test_every_flag_is_in_the_source_of_every_release_the_sheet_names():
    for knob, note in knob_rows():
        cell = knob_releases(knob, note).split(" (")[0]
        for profile in PROFILES.values():
            named = cell == "all" or profile.release.split(".post")[0] in cell.split(", ")
            source = (require_vllm_source(profile.release) / "vllm" / "engine" / "arg_utils.py").read_text()
            present = f'"{note.flag}"' in source or f"'{note.flag}'" in source
            said_elsewhere = profile.release in (note.note or "")  # "0.10.2: any value falls back to ..."
            assert present if named else (not present or said_elsewhere), (note.flag, profile.release)
