"""A lesson step's token diffs: one expander per tokenization the lesson has made so far (``tokens.NAME``).

The ones this step adds open (on the projector only the first: one screen); an earlier step's stays a
click away, except on the projector, where PRESENTER_CSS hides it for room.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from pykv.lessons.run.player import StepState
from pykv.lessons.values.tokens import TokenDiff
from pykv.ui.session import state
from pykv.ui.views.widgets import projector_chart
from pykv.ui.views.widgets.export_buttons import export_controls
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.projection import PROJECTOR_TEXT_PX
from pykv.viz.token_diff import token_diff_figure

PROJECTOR_WIDTH = 650  # px: the projector's engine column at 1280x720, where the diff is drawn (1080p: projected)


def new_tokens(states: list[StepState], step_state: StepState, hidden: bool) -> list[str]:
    """The tokenizations this step adds (none while its prediction is open)."""
    earlier = states[step_state.index - 1].tokens if step_state.index else {}
    return [] if hidden else [name for name, tokens in step_state.tokens.items() if earlier.get(name) is not tokens]


def render(step_state: StepState, new: list[str], link: str, projector: bool) -> None:
    """Every tokenization so far; ``link``: the step an exported figure names."""
    for name, tokens in step_state.tokens.items():
        with st.container(
            key=f"lesson_tokens_box_{name}" if name in new or not projector else f"projector_old_tokens_{name}"
        ):
            with st.expander(f"Token diff `tokens.{name}`", expanded=name in new[: 1 if projector else None]):
                _diff(name, tokens, link, projector)


def _diff(name: str, tokens: TokenDiff, link: str, projector: bool) -> None:
    """The diff chart: on the projector at both of its sizes (``projector_chart``), elsewhere with the two texts
    above it and its export below."""
    draw = partial(
        token_diff_figure, tokens.a, tokens.b, tokens.a_pieces, tokens.b_pieces, block_size=tokens.block_size
    )
    if projector:
        figure = draw(dark=state.is_dark(), width=PROJECTOR_WIDTH, floor_px=PROJECTOR_TEXT_PX)
        projector_chart.chart(figure, f"lesson_tokens_{name}")
        return
    clip = lambda text: repr(text if len(text) <= 60 else text[:59] + "…")  # noqa: E731
    st.caption(f"`tokens.{name}` · a: `{clip(tokens.a_text)}` · b: `{clip(tokens.b_text)}`")
    st.plotly_chart(draw(dark=state.is_dark()), theme=None, key=f"lesson_tokens_{name}", config=PLOT_CONFIG)
    export_controls(
        partial(draw, dark=False),
        f"pykv_tokens_{name}",
        f"pykv lesson token diff tokens.{name} · a: {clip(tokens.a_text)} · b: {clip(tokens.b_text)}",
        link,
        f"lesson_tokens_{name}",
    )
