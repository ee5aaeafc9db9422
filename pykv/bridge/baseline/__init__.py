"""A diagnosis saved as a baseline (``store``: JSON with the release, model, config, figures and findings), its
figures in a person's words (``figures``), and a new diagnosis compared to it (``compare``): never "same" where a
figure is missing on either side, a floor never compared as a rate, a change of release, engine or model said."""

from pykv.bridge.baseline.compare import Comparison, FigureRow, compare
from pykv.bridge.baseline.figures import figures
from pykv.bridge.baseline.store import (
    BASELINE_VERSION,
    baseline_body,
    baseline_bytes,
    load_baseline,
    parse_baseline,
    save_baseline,
)

__all__ = [
    "BASELINE_VERSION",
    "Comparison",
    "FigureRow",
    "baseline_body",
    "baseline_bytes",
    "compare",
    "figures",
    "load_baseline",
    "parse_baseline",
    "save_baseline",
]
