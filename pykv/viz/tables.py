"""Tables as DataFrames (the UI renders them with st.dataframe)."""

from __future__ import annotations

import pandas as pd

from pykv.border.snapshot import Snapshot

REQUEST_COLUMNS = ["request", "status", "prompt tokens", "output tokens", "preemptions", "recomputed tokens",
                   "swapped KiB", "TTFT ms", "text so far"]


def requests_frame(snapshot: Snapshot) -> pd.DataFrame:
    rows = [
        [r.request_id, r.status, r.num_prompt_tokens, r.num_output_tokens, r.num_preemptions, r.recomputed_tokens,
         round(r.swapped_bytes / 1024, 1), None if r.ttft_s is None else round(r.ttft_s * 1e3, 2), r.text]
        for r in snapshot.requests
    ]
    return pd.DataFrame(rows, columns=REQUEST_COLUMNS)


def preemptions_frame(snapshot: Snapshot) -> pd.DataFrame:
    """Every preemption so far with its measured cost (and the modelled PCIe figure for swaps)."""
    cols = ["step", "request_id", "mode", "num_blocks", "num_tokens", "num_bytes", "device", "fallback",
            "swap_out_s", "swap_in_s", "modelled_pcie_out_s", "modelled_pcie_in_s", "recomputed_tokens",
            "recompute_s", "steps_lost"]
    return pd.DataFrame([{k: getattr(p, k) for k in cols} for p in snapshot.preemptions], columns=cols)
