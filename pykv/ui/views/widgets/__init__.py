"""What the panels share: a metric row, the plotly config, a chart for the projector, the Export control, the
modelled target and its picker, the page CSS."""
