"""The cheat sheet as one self-contained HTML page: no script, no network request (no font, no image),
print CSS for one A4 or Letter page. Every row links the lesson steps that show it
(``lessons?lesson=ID&step=k`` under ``link_base``); every string is escaped, `backticks` become code.

    tuning order (lesson 11)   |  symptom -> cause -> change   |  knobs: flag, does, effect, releases
"""

from __future__ import annotations

import html
import re
from typing import Sequence
from urllib.parse import quote

from pykv.border.config import Knob, knobs
from pykv.border.vllm_profiles import PROFILES
from pykv.cheatsheet.content import (
    KNOB_COLUMNS,
    KNOB_NOTES,
    SYMPTOM_COLUMNS,
    SYMPTOMS,
    TUNING_ORDER,
    TUNING_RULE,
    Cite,
    KnobNote,
)
from pykv.lessons.format.schema import Lesson

TITLE = "Preemption in vLLM: the cheat sheet"
CSS = """
@page { margin: 10mm; }
.pykv-cheatsheet { font: 7pt/1.2 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color: #111; background: #fff; max-width: 190mm; margin: 0 auto; padding: 4mm; box-sizing: border-box; }
.pykv-cheatsheet h1 { font-size: 13pt; margin: 0; }
.pykv-cheatsheet .sub { color: #444; margin: 0.5mm 0 1.5mm; }
.pykv-cheatsheet h2 { font-size: 9pt; margin: 1.8mm 0 0.6mm; padding-bottom: 0.3mm; border-bottom: 0.3mm solid #333; }
.pykv-cheatsheet ol { margin: 0; padding-left: 5mm; }
.pykv-cheatsheet li { margin: 0.2mm 0; padding: 0; }
.pykv-cheatsheet p { margin: 0.8mm 0; }
.pykv-cheatsheet p, .pykv-cheatsheet li, .pykv-cheatsheet td, .pykv-cheatsheet th { font-size: 7pt; line-height: 1.2;
  letter-spacing: normal; }
.pykv-cheatsheet table { width: 100%; border-collapse: collapse; table-layout: fixed; }
.pykv-cheatsheet th { text-align: left; font-weight: 600; border-bottom: 0.3mm solid #333; padding: 0.4mm 1mm; }
.pykv-cheatsheet td { vertical-align: top; border-bottom: 0.2mm solid #ccc; padding: 0.4mm 1mm; }
.pykv-cheatsheet code { font: 6.5pt ui-monospace, Menlo, Consolas, monospace; background: #f1f1f1;
  padding: 0 0.4mm; overflow-wrap: anywhere; }
.pykv-cheatsheet a { color: #1a4f9c; text-decoration: none; }
.pykv-cheatsheet .cite { white-space: nowrap; }
.pykv-cheatsheet .knob { color: #555; font-size: 6.5pt; }
.pykv-cheatsheet .foot { color: #444; margin-top: 1mm; }
.pykv-cheatsheet .rule { font-size: 7pt; font-weight: normal; color: #444; }
@media print { .pykv-cheatsheet { padding: 0; max-width: none; } .pykv-cheatsheet a { color: #111; } }
"""


def cheatsheet_html(lessons: Sequence[Lesson], link_base: str = "lessons") -> str:
    """The page for this course (``lessons`` in course order: they number the citations). A citation of a
    lesson or step the course lacks is shown as plain text, never a broken link."""
    index = {lesson.id: (n, lesson) for n, lesson in enumerate(lessons, 1)}
    cite = lambda cites: " ".join(_cite(c, index, link_base) for c in cites)  # noqa: E731
    releases = ", ".join(f"{_release(p.release)} ({p.engine})" for p in PROFILES.values())
    tuning = "".join(
        f"<li><b>{_rich(head)}</b>: {_rich(text)} {cite(row.cites)}</li>"
        for row in TUNING_ORDER
        for head, text in [row.cells]
    )
    symptoms = _table(
        SYMPTOM_COLUMNS + ("Shown in",),
        [(*row.cells, cite(row.cites)) for row in SYMPTOMS],
        ("33%", "26%", "28%", "13%"),
    )
    knob_cells = [
        (
            f'{_rich(f"`{note.flag}`")} <span class="knob">({_esc(knob.name)})</span>',
            _rich(note.does or first_clause(knob.help)),
            _rich(note.preemption),
            _esc(knob_releases(knob, note)),
            cite(note.cites),
        )
        for knob, note in knob_rows()
    ]
    knob_table = _table(KNOB_COLUMNS + ("Shown in",), knob_cells, ("22%", "25%", "31%", "12%", "10%"), rich=False)
    lab_only = ", ".join(f"<code>{_esc(name)}</code>" for name in lab_only_knobs())
    body = (
        f"<h1>{_esc(TITLE)}</h1>"
        f'<p class="sub">From the pykv course · vLLM {_esc(releases)} · L7.4 = lesson 7, step 4: each link '
        f"opens that step in the lab</p>"
        f'<h2>Tuning order <span class="rule">· {_esc(TUNING_RULE)}</span></h2><ol>{tuning}</ol>'
        f"<h2>Troubleshooting: from the logs and metrics to the fix</h2>{symptoms}"
        f"<h2>Knobs</h2>{knob_table}"
        f'<p class="foot">Lab-only knobs (pykv, no vLLM flag): {lab_only}. <code>vllm_profile</code> picks '
        f"the release whose rules the lab follows.</p>"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_esc(TITLE)}</title>'
        f'<style>{CSS}</style></head><body><div class="pykv-cheatsheet">{body}</div></body></html>'
    )


# ---- what the page is made of -------------------------------------------------------------------


def knob_rows() -> list[tuple[Knob, KnobNote]]:
    """The knobs of EngineConfig's table that are vLLM flags, in table order, with their notes."""
    return [(knob, KNOB_NOTES[knob.name]) for knob in knobs() if knob.name in KNOB_NOTES]


def lab_only_knobs() -> list[str]:
    """The knobs a lesson can set that no vLLM release has as a flag."""
    return [knob.name for knob in knobs("lesson") if knob.name not in KNOB_NOTES]


def knob_releases(knob: Knob, note: KnobNote) -> str:
    """The releases that have the flag: the note's, else those of the profiles that have the knob."""
    having = [_release(p.release) for name, p in PROFILES.items() if knob.profiles is None or name in knob.profiles]
    text = note.versions or ("all" if len(having) == len(PROFILES) else ", ".join(having))
    return text + (f" ({note.note})" if note.note else "")


def first_clause(text: str) -> str:
    """``text`` up to its first ';' outside parentheses (a knob's help, short enough for a table cell)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            return text[:i]
    return text


def cited_lessons() -> set[str]:
    """Every lesson id the sheet cites."""
    rows = TUNING_ORDER + SYMPTOMS
    return {c.lesson for row in rows for c in row.cites} | {c.lesson for n in KNOB_NOTES.values() for c in n.cites}


def unresolved_cites(lessons: Sequence[Lesson]) -> list[Cite]:
    """The citations this course cannot link exactly: an unknown lesson id, or a step title it lacks."""
    titles = {lesson.id: {step.title for step in lesson.steps} for lesson in lessons}
    rows = [c for row in TUNING_ORDER + SYMPTOMS for c in row.cites] + [c for n in KNOB_NOTES.values() for c in n.cites]
    return [c for c in rows if c.lesson not in titles or (c.step is not None and c.step not in titles[c.lesson])]


# ---- HTML helpers -------------------------------------------------------------------------------


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _rich(text: str) -> str:
    """Escaped text with `backticks` as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _esc(text))


def _release(release: str) -> str:
    return release.split(".post")[0]  # "0.6.3.post1" -> "0.6.3"


def _cite(cite: Cite, index: dict[str, tuple[int, Lesson]], link_base: str) -> str:
    if cite.lesson not in index:
        return f'<span class="cite">{_esc(cite.lesson)}</span>'
    n, lesson = index[cite.lesson]
    k: int | None = next((i for i, step in enumerate(lesson.steps, 1) if step.title == cite.step), None)
    step = k or 1
    title = f"Lesson {n}, {lesson.title}" + (f", step {k}: {lesson.steps[k - 1].title}" if k else "")
    href = f"{link_base}?lesson={quote(lesson.id)}&step={step}"
    return f'<a class="cite" href="{_esc(href)}" title="{_esc(title)}">L{n}{f".{k}" if k else ""}</a>'


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[str], rich: bool = True) -> str:
    """A fixed-layout table; cells are plain text (escaped, `code` kept) unless ``rich`` is False (HTML)."""
    cols = "".join(f'<col style="width: {w}">' for w in widths)
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    cell = lambda text, last: text if last or not rich else _rich(text)  # noqa: E731 - the last cell is links
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(text, i == len(row) - 1)}</td>" for i, text in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
