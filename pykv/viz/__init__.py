"""Figures and tables of engine state: pure functions of a Snapshot (or DataFrame) -> plotly Figure.

No Streamlit here; pages in ``pykv.ui`` render these with ``st.plotly_chart(fig, theme=None, key=...)``.
"""

from pykv.viz.blocks import block_grid_figure, block_tables_figure
from pykv.viz.narration import metrics_strip, narrate
from pykv.viz.queues import queues_figure
from pykv.viz.tables import preemptions_frame, requests_frame
from pykv.viz.theme import REQUEST_PALETTE, request_color, template

__all__ = [
    "REQUEST_PALETTE", "block_grid_figure", "block_tables_figure", "metrics_strip", "narrate", "preemptions_frame",
    "queues_figure", "request_color", "requests_frame", "template",
]
