"""A lesson step's text column below its title: errors, the filled narration, the side runs, the checks.
The lesson player and a class follower's page both draw it; on the projector the side runs are a chart
and the checks fold to one "✓ 6/6" line."""

from __future__ import annotations

import re

import streamlit as st

from pykv.lessons.format.differs import callout_markdown
from pykv.lessons.run.player import StepState
from pykv.lessons.values.checks import CheckResult, format_short, format_value
from pykv.ui.safe_text import breakable
from pykv.ui.session import state
from pykv.ui.views.panels.follower_views import PROJECTOR_WIDTHS
from pykv.ui.views.widgets import projector_chart
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.projection import PROJECTOR_TEXT_PX
from pykv.viz.side_runs import side_runs_figure

PROJECTOR_WORDS = 70  # narration words the projector shows at once (the room reads them from the back row)
ROOM_CHART_WORDS = 30  # the words a class projector gives up for the room's answers beside them (1280x720)
RUN_FIELDS = (
    "device",
    "steps",
    "output_tokens",
    "preemptions",
    "recomputed_tokens",
    "recompute_s",
    "swapped_bytes",
    "swap_s",
    "wall_s",
    "tokens_per_s",
    "ttft_p50_s",
    "tpot_p50_s",
)


def body(
    step_state: StepState, key_prefix: str = "lesson_", folded_checks: bool = False, words: int = PROJECTOR_WORDS
) -> None:
    """``folded_checks``: the projector's "✓ 6/6" line, the checks themselves in an expander, and ``words`` of
    the narration shown (the rest under "More on this step")."""
    for error in step_state.errors:
        st.error(error)
    if folded_checks:  # the projector: what the room reads fits; the rest one click away
        shown, rest = projector_split(step_state.narration, words)
        _markdown(shown)
        if rest:
            with st.expander("More on this step"):
                _markdown(rest)
    else:
        _markdown(step_state.narration)
    if step_state.step.differs is not None and folded_checks:  # the projector: opened when it is talked about
        with st.expander("Claim · vLLM · pykv", icon=":material/campaign:"):
            st.markdown(callout_markdown(step_state.step.differs))
    elif step_state.step.differs is not None:  # where the common claim, vLLM and pykv part ways
        st.markdown(callout_markdown(step_state.step.differs))
    if step_state.runs and not folded_checks:  # the projector draws them as a chart by the grid
        st.markdown("**Side runs** (each run to completion on its own engine)")
        st.dataframe(
            runs_rows(step_state.runs), hide_index=True, key=f"{key_prefix}runs", width="stretch", row_height=30
        )
    if not step_state.checks:
        return
    lines = "\n".join(check_line(c) for c in step_state.checks)
    if folded_checks:
        with st.expander(f"Checks {checks_summary(step_state)}", expanded=bool(step_state.failed_checks)):
            _markdown(lines)
    else:  # one element, not a heading and a list: a class's pages all redraw this at once
        _markdown(f"**Checks**\n\n{lines}")


def _markdown(text: str) -> None:
    """The step's Markdown, its long identifiers breaking only after a : _ or . (``safe_text.breakable``: no HTML
    but the break points it adds)."""
    st.markdown(breakable(text), unsafe_allow_html=True)


def checks_summary(step_state: StepState) -> str:
    """ "✓ 6/6", or "✗ 1 of 6 failed"."""
    total, failed = len(step_state.checks), len(step_state.failed_checks)
    return f"✓ {total}/{total}" if not failed else f"✗ {failed} of {total} failed"


def projector_split(narration: str, words: int = PROJECTOR_WORDS) -> tuple[str, str]:
    """(what the projector shows, the rest), cut where the room can stop reading (``ends_a_sentence``): whole
    paragraphs while they fit in ``words`` (a fenced block is one, and a paragraph that ends with a colon goes
    with what it introduces); a first paragraph longer than that is cut after its last sentence (or list item)
    that fits, or its first."""
    groups = _introduced(_paragraphs(narration))
    shown: list[str] = []
    for i, group in enumerate(groups):
        if len(" ".join(shown + group).split()) > words:
            rest = [p for later in groups[i:] for p in later]
            if not shown:
                head, tail = _units_that_fit(rest[0], words)
                shown, rest = [head], [tail] * bool(tail) + rest[1:]
            return "\n\n".join(shown), "\n\n".join(rest)
        shown += group
    return "\n\n".join(shown), ""


_SENTENCE_END = re.compile(r"[.!?][*_`\"')\]]*$")  # "blocks." / "(as vLLM does.)" / "**free**."
# a sentence ends at . ! or ? before a space and a capital or markup ("e.g. the", "0.6.3 and" go on)
_SENTENCE_BREAK = re.compile(r"[.!?][*_`\"')\]]*(?=\s+[A-Z*`(\"])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s", re.M)


def ends_a_sentence(shown: str) -> bool:
    """Whether the projector's part stops where a reader can: after a sentence, a whole block (a fence, a table,
    a quote, a list) or what a colon introduced; never after a colon or mid-sentence."""
    paragraphs = _paragraphs(shown)
    if not paragraphs:
        return True
    last = paragraphs[-1]
    introduced = len(paragraphs) > 1 and paragraphs[-2].rstrip().endswith(":")
    return introduced or _is_block(last) or bool(_SENTENCE_END.search(last.rstrip()))


def _is_block(paragraph: str) -> bool:
    return paragraph.lstrip().startswith(("```", "|", ">", "#")) or bool(_LIST_ITEM.match(paragraph))


def _paragraphs(narration: str) -> list[str]:
    """The narration's paragraphs; a fenced block is one, blank lines and all."""
    paragraphs: list[str] = []
    current: list[str] = []
    fenced = False
    for line in narration.strip().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                paragraphs.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        paragraphs.append("\n".join(current))
    return paragraphs


def _introduced(paragraphs: list[str]) -> list[list[str]]:
    """The paragraphs in groups the projector never splits: one that ends with a colon and what it introduces."""
    groups: list[list[str]] = []
    for paragraph in paragraphs:
        if groups and groups[-1][-1].rstrip().endswith(":"):
            groups[-1].append(paragraph)
        else:
            groups.append([paragraph])
    return groups


def _units_that_fit(paragraph: str, words: int) -> tuple[str, str]:
    """(the paragraph's first units that fit in ``words``, at least one, the rest): a list's items, a prose
    paragraph's sentences (never ending on one that introduces what follows, unless it is the first); a list whose
    first item is too long, that item's sentences. A fence, a table or a quote is shown whole."""
    if paragraph.lstrip().startswith(("```", "|", ">")):
        return paragraph, ""
    starts = [m.start() for m in _LIST_ITEM.finditer(paragraph)] if _LIST_ITEM.match(paragraph) else []
    items = [paragraph[a:b].strip() for a, b in zip(starts, [*starts[1:], len(paragraph)])]
    after: list[str] = []
    if items and len(items[0].split()) <= words:
        units, joiner = items, "\n"
    else:  # prose, or a list whose first item alone is too long
        text, after = (items[0], items[1:]) if items else (paragraph, [])
        ends = [m.end() for m in _SENTENCE_BREAK.finditer(text)]
        units, joiner = [text[a:b].strip() for a, b in zip([0, *ends], [*ends, len(text)])], " "
    taken = 1
    while taken < len(units) and len(" ".join(units[: taken + 1]).split()) <= words:
        taken += 1
    if taken > 1 and units[taken - 1].endswith(":"):
        taken -= 1
    rest = [joiner.join(units[taken:]), "\n".join(after)]
    return joiner.join(units[:taken]), "\n\n".join(part for part in rest if part)


def runs_chart(step_state: StepState, key: str, projector: bool = False) -> None:
    """The step's side runs as a chart (``projector``: at both projector sizes, ``projector_chart``, in the room
    the grid's column leaves under it)."""
    runs = step_state.runs
    devices = sorted({run.device for run in runs.values()})
    fig = side_runs_figure(
        list(runs),
        {name: vars(run) for name, run in runs.items()},
        ", ".join(devices),
        dark=state.is_dark(),
        width=PROJECTOR_WIDTHS[0] if projector else None,
        floor_px=PROJECTOR_TEXT_PX if projector else None,
    )
    if projector:
        projector_chart.chart(fig, key)
    else:
        st.plotly_chart(fig, theme=None, key=key, config=PLOT_CONFIG)


def runs_rows(runs: dict) -> list[dict]:
    """One row per measured field, one column per run: the text column is narrow and a run per row put the
    later fields past its right edge (lesson 2 step 6 showed three of its columns)."""
    return [{"measured": f} | {name: format_value(getattr(run, f)) for name, run in runs.items()} for f in RUN_FIELDS]


def check_line(check: CheckResult) -> str:
    """One Markdown list line: ✓/✗, what was checked, the actual value (and the expected one if it failed)."""
    if check.passed:
        line = f"- :green[✓] {check.description} — got `{format_short(check.actual)}`"
    elif check.error:
        line = f"- :red[✗ {check.description}] — {check.error}"
    else:
        line = (
            f"- :red[✗ {check.description}] — got `{format_short(check.actual)}`, "
            f"expected `{format_short(check.expected)}`"
        )
    return line + (f"  \n  *{check.why}*" if check.why else "")
