"""A played lesson as a review pack: one section per lesson step played (its narration, the checks with
pass or fail, its side runs, and the block grid and queues after it), then the run behind the last step
(timeline, preemption bill, requests, metrics, logs) as in a Playground pack."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence
from urllib.parse import urlencode

from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.player import StepState
from pykv.lessons.values.checks import CheckResult, format_short
from pykv.review_pack.deep_link import app_address
from pykv.review_pack.modelled import RunModelled
from pykv.review_pack.page import Figures, PackFigure, ReviewPack, Section, esc, even, link_html, para, table
from pykv.review_pack.record import RunRecord, record_from_lab
from pykv.review_pack.run import grid_figures, run_files, run_sections, summary_html
from pykv.review_pack.text import markdown_html
from pykv.viz import queues_figure

RUN_COLUMNS = (
    "steps",
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


def lesson_link(lesson: Lesson, step: int, root: str | None = None) -> str:
    """The Lessons page's own link to a step: ``ROOT/lessons?lesson=ID&step=K`` (relative where ``root``, the lab's
    address, is None)."""
    return app_address("lessons?" + urlencode({"lesson": lesson.id, "step": str(step)}), root)


def check_html(c: CheckResult) -> str:
    if c.passed:
        line = f'<span class="pass">✓ pass</span> {esc(c.description)} — got <code>{esc(format_short(c.actual))}</code>'
    elif c.error:
        line = f'<span class="fail">✗ fail</span> {esc(c.description)} — {esc(c.error)}'
    else:
        line = (
            f'<span class="fail">✗ fail</span> {esc(c.description)} — got '
            f"<code>{esc(format_short(c.actual))}</code>, expected <code>{esc(format_short(c.expected))}</code>"
        )
    return f"<li>{line}" + (f"<br><em>{esc(c.why)}</em>" if c.why else "") + "</li>"


def step_section(lesson: Lesson, state: StepState, previous: StepState | None, root: str | None = None) -> Section:
    n, k = len(lesson.steps), state.index + 1
    link = lesson_link(lesson, k, root)
    blocks: list = [
        f'<p class="muted">Step {k} of {n} · link: {link_html(link)}</p>',
        markdown_html(state.narration),
    ]
    blocks += [para(e, "fail") for e in state.errors]
    if state.checks:
        passed = sum(c.passed for c in state.checks)
        blocks.append(f"<h3>Checks: {passed} of {len(state.checks)} pass</h3>")
        blocks.append('<ul class="checks">' + "".join(check_html(c) for c in state.checks) + "</ul>")
    new_runs = {name: run for name, run in state.runs.items() if previous is None or previous.runs.get(name) is not run}
    if new_runs:
        device = ", ".join(sorted({run.device for run in new_runs.values()}))
        blocks.append(f"<h3>Side runs (each to completion on an engine of its own; measured on {esc(device)})</h3>")
        blocks.append(
            table(
                ["run", *RUN_COLUMNS],
                [(name, *(getattr(run, f) for f in RUN_COLUMNS)) for name, run in new_runs.items()],
                "wide",
                even(["run", *RUN_COLUMNS]),
            )
        )
    lab, snap = state.lab, state.lab.view
    same = previous is not None and previous.lab is lab and previous.lab.view is snap
    if same:
        blocks.append(para(f"The engine did not move in this step (engine step {snap.step}, as after step {k - 1})."))
    else:
        prev_snap = lab.previous
        caption = f"After lesson step {k}: engine step {snap.step}."
        # the pack's link is the lesson's (its step is the lesson step): each image links to lesson step k
        figs = [replace(f, step=k) for f in grid_figures(snap, prev_snap, f"lesson-step-{k}-grid", caption)]
        figs.append(
            PackFigure(
                f"lesson-step-{k}-queues",
                f"Queues after lesson step {k} (engine step {snap.step}).",
                queues_figure(snap, changed=None),
                half=True,
                step=k,
            )
        )
        blocks.append(Figures(tuple(figs)))
    return Section(f"step-{k}", f"Step {k}: {state.step.title}", tuple(blocks))


def lesson_pack(lesson: Lesson, states: Sequence[StepState], record: RunRecord | None = None) -> ReviewPack:
    """``states``: the lesson steps played so far, in order (``LessonPlayer.states``); ``record``: the last one's
    run, if taken already (else taken here from its Lab)."""
    n, played = len(lesson.steps), len(states)
    checks = [c for s in states for c in s.checks]
    failed = sum(not c.passed for c in checks)
    record = record or record_from_lab(states[-1].lab)
    link = lesson_link(lesson, played, record.lab_root)
    record = replace(record, preset=None, app_link=link)
    cls = ' class="fail"' if failed else ""
    intro = para(lesson.summary) + (
        f"<p{cls}>{played} of {n} steps played; {len(checks) - failed} of {len(checks)} checks pass"
        + (f", {failed} fail." if failed else ".")
        + f" Link: {link_html(link)}</p>"
    )
    sections = [step_section(lesson, s, states[i - 1] if i else None, record.lab_root) for i, s in enumerate(states)]
    modelled = RunModelled(record)
    sections += run_sections(record, prefix="run-", modelled=modelled)
    sections = [
        Section(s.id, (f"The run: {s.title[0].lower()}{s.title[1:]}" if s.id.startswith("run-") else s.title), s.blocks)
        for s in sections
    ]  # "The run: modelled on H100-SXM + ...": names keep their case
    csvs, files = run_files(record, modelled=modelled)
    p = record.config.profile
    subtitle = f"Lesson “{lesson.title}” on vLLM {p.release} rules ({p.name}), on {record.last.device}."
    return ReviewPack(
        f"pykv lesson review pack: {lesson.title}",
        subtitle,
        tuple(sections),
        summary=intro + summary_html(record),
        link=link,
        csvs=csvs,
        files=files,
    )
