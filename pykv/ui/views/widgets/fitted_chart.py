"""A chart laid out for the width the page draws it at: plotly never wraps a title or a subtitle and keeps a legend
of long names beside the plot, squeezing it ("recompute, vLLM 0.6.3 (V0), modelled H100-SXM + Llama-3.1-8B"); the
same fitting as an export's (``pykv.review_pack.fit.fit_width``) wraps the lines and moves a wide legend under the
plot. For the Sweep page's charts, whose series are named with their releases."""

from __future__ import annotations

import plotly.graph_objects as go

from pykv.review_pack.fit import fit_width

PAGE_CHART_PX = 960  # the main column of a wide page on a 1440 px screen, less the page's padding


def fitted(fig) -> go.Figure:
    """``fig`` (a figure or a ``SpecFigure``) as a ``go.Figure`` fitted to the page's chart width."""
    return fit_width(fig if isinstance(fig, go.Figure) else go.Figure(fig.to_dict()), PAGE_CHART_PX)
