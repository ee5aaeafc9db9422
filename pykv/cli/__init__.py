"""The headless command line (``python -m pykv``): its commands, error lines, estimates and summaries."""
