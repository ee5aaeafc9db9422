"""One point in time (a single /metrics scrape, one stats line): its values as a table, not a timeline of one dot."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pykv.bridge import Diagnosis


def is_one_point(d: Diagnosis) -> bool:
    return len(d.samples) == 1


def point_rows(d: Diagnosis) -> list[tuple[str, str]]:
    s = d.samples[0]
    pct = lambda v: "not read" if v is None else f"{v:.1%}"  # noqa: E731
    num = lambda v, unit="": "not read" if v is None else f"{v:,.0f}{unit}"  # noqa: E731
    return [
        ("running", num(s.running)),
        ("waiting", num(s.waiting)),
        ("swapped", num(s.swapped)),
        ("GPU KV cache usage", pct(s.gpu_kv_usage)),
        ("CPU KV cache usage", pct(s.cpu_kv_usage)),
        ("prompt throughput", num(s.prompt_tps, " tokens/s")),
        ("generation throughput", num(s.gen_tps, " tokens/s")),
        ("prefix cache hit rate", pct(s.prefix_hit_rate)),
    ]


def render(d: Diagnosis) -> None:
    s = d.samples[0]
    where = f" at {s.time}" if s.time else ""
    st.markdown(f"**One point in time{where}** (a single scrape or stats line: no timeline to draw)")
    st.dataframe(pd.DataFrame(point_rows(d), columns=["figure", "value"]), hide_index=True, key="server_point")
