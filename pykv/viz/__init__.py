"""Figures and tables of engine state: pure functions of a Snapshot (or DataFrame) -> plotly Figure.

No Streamlit here; pages in ``pykv.ui`` render these with ``st.plotly_chart(fig, theme=None, key=...)``.
"""

from pykv.viz.block_size_chart import block_size_cost_figure
from pykv.viz.blocks import block_grid_figure, block_tables_figure
from pykv.viz.narration import metrics_strip, narrate
from pykv.viz.predictions import answers_figure
from pykv.viz.queues import queues_figure
from pykv.viz.sweep_charts import preemption_cost_figure, runs_figure
from pykv.viz.tables import engine_times, preemption_costs_frame, preemptions_frame, requests_frame
from pykv.viz.theme import REQUEST_PALETTE, request_color, template
from pykv.viz.timeline import selected_step, timeline_figure
from pykv.viz.token_diff import token_diff_figure, token_diff_frame

__all__ = [
    "REQUEST_PALETTE",
    "answers_figure",
    "block_grid_figure",
    "block_size_cost_figure",
    "block_tables_figure",
    "engine_times",
    "metrics_strip",
    "narrate",
    "preemption_cost_figure",
    "preemption_costs_frame",
    "preemptions_frame",
    "queues_figure",
    "request_color",
    "requests_frame",
    "runs_figure",
    "selected_step",
    "template",
    "timeline_figure",
    "token_diff_figure",
    "token_diff_frame",
]
