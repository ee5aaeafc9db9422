"""The plotly config every chart of the app is drawn with: no plotly logo, and the modebar's camera saves a 2x PNG."""

from __future__ import annotations

PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
