"""The host link a swap or offload crosses on a GPU: the one PCIe model of the project (labelled
"modelled" wherever shown, never measured). A copy costs ``bytes / bandwidth + copies * overhead``.

``LINKS`` holds measured-typical x16 bandwidths per direction and kind of host memory. ``PCIE_GBPS``
is the one-number form the engine's own swap figures use (``pcie_bandwidth_gbps``): the harmonic mean
of the two pinned directions (to 0.1 GB/s), which prices a round trip (out, then back in) as ``LINKS`` does.
``pykv.gpu_model`` prices each direction on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

# Per cudaMemcpyAsync issued (launch + DMA setup), µs. Sources: the per-copy cost of ~2-4 µs that NVIDIA's
# CUDA best-practices guide and bandwidthTest-style measurements show for small copies; fitted here to the
# vLLM paper's Figure 19(a) (OPT-13B, 256 tokens = 209.7 MB swapped out and in with one copy per block,
# layer and K/V at block size 1: ~135 ms on an A100-40GB), which leaves 2.9 µs per copy after the bytes.
PCIE_COPY_OVERHEAD_US = 3.0
PAGEABLE_SHARE = 1.4 / 12.6  # pageable / pinned, from the Gen3 measurement below (no newer one is used here)


@dataclass(frozen=True)
class HostLink:
    """A host<->device link: measured-typical GB/s (1e9 bytes/s) of one large copy, pinned host memory."""

    name: str
    h2d_gbps: float  # host -> device (swap-in, offload load)
    d2h_gbps: float  # device -> host (swap-out, offload store)
    source: str

    def gbps(self, direction: str, pinned: bool = True) -> float:
        if direction not in ("h2d", "d2h"):
            raise ValueError(f"direction must be 'h2d' or 'd2h', got {direction!r}.")
        pinned_gbps = self.h2d_gbps if direction == "h2d" else self.d2h_gbps
        return pinned_gbps if pinned else pinned_gbps * PAGEABLE_SHARE

    @property
    def round_trip_gbps(self) -> float:
        """One bandwidth that prices out + in like the two directions: their harmonic mean."""
        return 2 / (1 / self.h2d_gbps + 1 / self.d2h_gbps)


LINKS = {  # x16 raw per direction: Gen3 15.8, Gen4 31.5, Gen5 63 GB/s (PCI-SIG); measured figures below
    "gen3": HostLink(
        "PCIe Gen3 x16",
        12.6,
        12.6,
        "pinned 12.6 GB/s vs pageable 1.4 GB/s measured on a PCIe Gen3 x16 host (as quoted in issue 18)",
    ),
    "gen4": HostLink(
        "PCIe Gen4 x16",
        25.5,
        25.5,
        "A100 (PCIe Gen4) pinned H2D 25-26 GB/s measured (CUDA "
        "bandwidthTest, as quoted in issue 18); D2H taken equal (no separate figure used)",
    ),
    "gen5": HostLink(
        "PCIe Gen5 x16",
        35.0,
        53.0,
        "H100 (PCIe Gen5) pinned H2D ~35 GB/s, D2H ~53 GB/s measured (as quoted in issue 18)",
    ),
}
PCIE_GBPS = {gen: round(LINKS[gen].round_trip_gbps, 1) for gen in ("gen4", "gen5")}  # the engine's one-number figures
DEFAULT_PCIE_GBPS = PCIE_GBPS["gen5"]


def modelled_copy_seconds(num_bytes: int, num_copies: int, bandwidth_gbps: float, overhead_us: float) -> float:
    """A PCIe transfer modelled as bytes / bandwidth plus a fixed overhead per copy issued."""
    return num_bytes / (bandwidth_gbps * 1e9) + num_copies * overhead_us * 1e-6


def link_copy_seconds(link: HostLink, num_bytes: int, direction: str, pinned: bool = True, copies: int = 1) -> float:
    """The same model, one direction of a named link."""
    if copies < 1:
        raise ValueError(f"copies must be at least 1, got {copies}.")
    if num_bytes < 0:
        raise ValueError(f"num_bytes must not be negative, got {num_bytes}.")
    return modelled_copy_seconds(num_bytes, copies, link.gbps(direction, pinned), PCIE_COPY_OVERHEAD_US)
