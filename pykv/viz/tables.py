"""Tables as DataFrames (the UI renders them with st.dataframe)."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from pykv.border.snapshot import Snapshot
from pykv.border.units import fmt_bytes, fmt_duration
from pykv.gpu_model.schedule import RequestTimes, request_times

REQUEST_COLUMNS = [
    "request",
    "status",
    "prompt tokens",
    "output tokens",
    "preemptions",
    "recomputed tokens",
    "swapped KiB",
    "TTFT ms",
    "text so far",
]


ENGINE_TTFT = "TTFT ms (engine time)"


def engine_times(snapshots: Sequence[Snapshot]) -> dict[str, RequestTimes]:
    """Each request's TTFT / TPOT in engine time: the measured step times from its arrival to its first token
    (and on), summed. A stepped run's wall clock also holds the user's pauses between steps (a review pack once
    showed a TTFT of 122,000 ms); engine time is what the engine spent."""
    step_ms = [s.report.step_time_s * 1e3 for s in snapshots if s.report is not None]
    return request_times(snapshots, step_ms)


def requests_frame(snapshot: Snapshot, engine: dict[str, RequestTimes] | None = None) -> pd.DataFrame:
    """The requests table. ``engine`` (from :func:`engine_times`): the TTFT column is engine time, named so;
    else the measured wall time from add_request to the first token."""

    def ttft(r) -> float | None:
        if engine is not None:
            t = engine.get(r.request_id)
            return None if t is None or t.ttft_ms is None else round(t.ttft_ms, 2)
        return None if r.ttft_s is None else round(r.ttft_s * 1e3, 2)

    rows = [
        [
            r.request_id,
            r.status,
            r.num_prompt_tokens,
            r.num_output_tokens,
            r.num_preemptions,
            r.recomputed_tokens,
            round(r.swapped_bytes / 1024, 1),
            ttft(r),
            r.text,
        ]
        for r in snapshot.requests
    ]
    columns = list(REQUEST_COLUMNS)
    if engine is not None:
        columns[columns.index("TTFT ms")] = ENGINE_TTFT
    return pd.DataFrame(rows, columns=columns)


def preemptions_frame(snapshot: Snapshot) -> pd.DataFrame:
    """Every preemption so far with its measured cost (and the modelled PCIe figure for swaps)."""
    cols = [
        "step",
        "request_id",
        "mode",
        "num_blocks",
        "num_tokens",
        "num_bytes",
        "device",
        "fallback",
        "swap_out_s",
        "swap_out_cpu_s",
        "swap_in_s",
        "swap_in_cpu_s",
        "modelled_pcie_out_s",
        "modelled_pcie_in_s",
        "recomputed_tokens",
        "recompute_s",
        "recompute_cpu_s",
        "steps_lost",
    ]
    return pd.DataFrame([{k: getattr(p, k) for k in cols} for p in snapshot.preemptions], columns=cols)


# The Preemption costs tab's columns: (column of ``preemptions_frame``, its heading on the page, how a value is written)
_COSTS_SHOWN = (
    ("step", "step", None),
    ("request_id", "request", None),
    ("mode", "mode", None),
    ("num_blocks", "blocks", None),
    ("num_tokens", "tokens", None),
    ("num_bytes", "KV bytes", fmt_bytes),
    ("device", "measured on", None),
    ("fallback", "fallback", None),
    ("swap_out_s", "swap out", fmt_duration),
    ("swap_out_cpu_s", "swap out, CPU", fmt_duration),
    ("swap_in_s", "swap in", fmt_duration),
    ("swap_in_cpu_s", "swap in, CPU", fmt_duration),
    ("modelled_pcie_out_s", "PCIe out (modelled)", fmt_duration),
    ("modelled_pcie_in_s", "PCIe in (modelled)", fmt_duration),
    ("recomputed_tokens", "recomputed tokens", None),
    ("recompute_s", "recompute time", fmt_duration),
    ("recompute_cpu_s", "recompute, CPU", fmt_duration),
    ("steps_lost", "steps lost", None),
)


def preemption_costs_frame(snapshot: Snapshot) -> pd.DataFrame:
    """``preemptions_frame`` for people: each time in µs, ms or s with its unit (a swap of a few blocks takes
    microseconds: "0.000005" in seconds read as nothing), bytes in KiB/MiB, counts as whole numbers, "—" where a
    value does not apply (a swap's recompute time), and no column that applies to no row. The CSV keeps
    ``preemptions_frame``'s seconds; ``step`` and ``request_id`` keep their names, by which the modelled bills are
    matched."""
    raw = preemptions_frame(snapshot)
    done = [mode == "recompute" and n > 0 for mode, n in zip(raw["mode"], raw["recomputed_tokens"])]
    for column in ("recompute_s", "recompute_cpu_s"):  # none yet before the re-prefill: "—", not a measured 0
        raw[column] = [s if ran else None for s, ran in zip(raw[column], done)]
    out = pd.DataFrame(index=raw.index)
    for column, heading, fmt in _COSTS_SHOWN:
        name = column if column in ("step", "request_id") else heading
        if fmt is not None:
            out[name] = [fmt(v) for v in raw[column]]
        elif column in ("num_blocks", "num_tokens", "recomputed_tokens", "steps_lost"):
            out[name] = raw[column].astype("Int64")  # a missing steps_lost made the column float ("9.0")
        else:
            out[name] = ["—" if pd.isna(v) else v for v in raw[column]]
    # A column that applies to no row (swap times in a recompute-only run) is dropped: the costs that did apply
    # stay on screen instead of behind a row of dashes
    return out[[c for c in out.columns if not (out[c].astype(str) == "—").all()]]
