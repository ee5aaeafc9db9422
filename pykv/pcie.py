"""The modelled PCIe link a swap would cross on a GPU (labelled "modelled" wherever shown, never
measured): effective x16 bandwidths with pinned memory, a fixed cost per copy issued, and the model."""

from __future__ import annotations

PCIE_GBPS = {"gen4": 25.0, "gen5": 50.0}  # x16, pinned host memory, effective GB/s
DEFAULT_PCIE_GBPS = PCIE_GBPS["gen5"]
PCIE_COPY_OVERHEAD_US = 10.0  # per copy issued (launch + driver), µs


def modelled_copy_seconds(num_bytes: int, num_copies: int, bandwidth_gbps: float, overhead_us: float) -> float:
    """A PCIe transfer modelled as bytes / bandwidth plus a fixed overhead per copy issued."""
    return num_bytes / (bandwidth_gbps * 1e9) + num_copies * overhead_us * 1e-6
