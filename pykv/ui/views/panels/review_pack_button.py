"""The Review pack control of the Playground, the Sweep page and the Lessons page: one popover with the
pack as one HTML page or as a zip (``pykv.review_pack``).

What a pack is made of is taken when the popover opens (a copy of the history, the metrics text: exactly what is
on screen); the pack itself is made only when a download is pressed: Streamlit runs the button's callable on a
thread of its own at the click, so no rerun (a Step, a Play tick) pays for either.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from pykv.border.timing_measures import DEFAULT_MEASURE
from pykv.lab.lab import Lab
from pykv.lab.sweep import SweepResult, SweepSpec
from pykv.lessons.format.schema import Lesson
from pykv.lessons.run.player import StepState
from pykv.lessons.values.paths import LESSON_TARGET
from pykv.review_pack import ReviewPack, build_zip, lesson_pack, record_from_lab, render_html, run_pack, sweep_pack
from pykv.review_pack.export import static_export_problem
from pykv.ui.safe_text import plain
from pykv.ui.session import lab_address, state
from pykv.ui.views.widgets import target


def playground_pack(lab: Lab) -> Callable[[], ReviewPack]:
    """The Playground's pack maker: the Lab's whole history as it stands now, modelled on the session's target."""
    record = record_from_lab(lab, target=target.current(), lab_root=lab_address.lab_root())
    return lambda: run_pack(record)


def sweep_pack_maker(
    spec: SweepSpec,
    result: SweepResult,
    total: int,
    seconds: float,
    capacity: int | None,
    measure: str = DEFAULT_MEASURE,
) -> Callable[[], ReviewPack]:
    """The Sweep page's pack maker; the model's shape sizes each run's vLLM command (--swap-space, --max-model-len);
    ``result`` is priced on the session's target (``sweep_modelled.with_modelled``), whose charts the pack draws on
    the clock the page shows (``measure``)."""
    base = spec.base
    model = state.shared_model(base.model, base.device, base.dtype).config
    est = target.current_estimate()
    return lambda: sweep_pack(
        spec, result, total=total, seconds=seconds, capacity=capacity, model=model, estimate=est, measure=measure
    )


def lesson_pack_maker(lesson: Lesson, states: list[StepState]) -> Callable[[], ReviewPack]:
    """The lesson's pack: the steps played so far (``LessonPlayer.states``), modelled on the lesson's target."""
    # now: the player may fork that Lab next step (and the browser's address is known on this thread only)
    record = record_from_lab(states[-1].lab, target=LESSON_TARGET, lab_root=lab_address.lab_root())
    return lambda: lesson_pack(lesson, states, record=record)


def review_pack_controls(prepare: Callable[[], Callable[[], ReviewPack]], stem: str, key: str, what: str) -> None:
    """A "Review pack" popover: the HTML page and the zip. ``prepare`` runs when the popover opens (a rerun: a
    Step or a Play tick draws no closed popover's buttons), takes what the pack is made of as the page shows it, and
    returns the maker each button calls only when pressed."""
    with st.popover(
        "Review pack",
        icon=":material/summarize:",
        key=f"{key}_review_pack",
        on_change="rerun",
        help=f"Download {what} as one self-contained page for someone who was not there",
    ) as popover:
        if not popover.open:
            return
        make = prepare()
        problem = static_export_problem()
        st.caption(
            f"{what[0].upper() + what[1:]}: configuration and the matching vLLM command, figures, tables, "
            "metrics and logs. The page works offline and prints one section per page."
        )
        with st.container(horizontal=True, gap="small"):
            st.download_button(
                "HTML page",
                data=lambda: render_html(make()),
                file_name=f"{stem}.html",
                mime="text/html",
                key=f"{key}_review_html",
                on_click="ignore",
                icon=":material/download:",
            )
            st.download_button(
                "Zip",
                data=lambda: build_zip(make()),
                file_name=f"{stem}.zip",
                mime="application/zip",
                key=f"{key}_review_zip",
                on_click="ignore",
                icon=":material/folder_zip:",
                help="The page, every figure as SVG and PNG, the CSVs and the last snapshot as JSON",
            )
        if problem:
            st.caption(plain(f"The zip will hold no SVG/PNG figures (it says why inside): {problem}"))
