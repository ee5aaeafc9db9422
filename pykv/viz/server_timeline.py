"""A real server's timeline, from what its log or metrics said (``pykv.bridge``): the queues (running, waiting,
swapped), GPU and CPU KV usage, throughput, prefix-cache hit rate and preemptions per interval, in four stacked
panels on one time (or sample) axis, with start-up facts as a note. Pure: samples in, a Figure out."""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from pykv.bridge.base.records import Sample, StartupFact
from pykv.viz.theme import REQUEST_PALETTE, colors, figure

PANELS = (("queues", "requests"), ("kv", "KV usage"), ("tps", "tokens/s"), ("preempt", "preemptions"))
GAP = 0.05


def _x(samples: Sequence[Sample]) -> tuple[list, str]:
    """Seconds from the first sample when the samples are timed, else their order."""
    if samples and all(s.seconds is not None for s in samples):
        start = samples[0].seconds or 0.0
        return [(s.seconds or 0.0) - start for s in samples], "seconds from the first sample"
    return list(range(1, len(samples) + 1)), "sample (stats line or scrape)"


def _series(samples: Sequence[Sample], field: str, scale: float = 1.0) -> list:
    return [None if getattr(s, field) is None else getattr(s, field) * scale for s in samples]


def server_timeline_figure(
    samples: Sequence[Sample],
    startup: Sequence[StartupFact] = (),
    *,
    dark: bool = False,
    height: int = 620,
    title: str = "Your server, as its log and metrics show it",
) -> go.Figure:
    x, x_title = _x(samples)
    c = colors(dark)
    panel_height = (1 - GAP * (len(PANELS) - 1)) / len(PANELS)
    layout: dict = {}
    for i, (_, label) in enumerate(PANELS):
        top = 1 - i * (panel_height + GAP)
        suffix = "" if i == 0 else str(i + 1)
        domain = [round(max(0.0, top - panel_height), 6), round(min(1.0, top), 6)]
        # automargin: the left margin grows to the tick labels (at l=8 only their last digit showed)
        layout[f"yaxis{suffix}"] = dict(
            domain=domain,
            title=dict(text=label, font=dict(size=11), standoff=4),
            automargin=True,
            rangemode="tozero",
            **({"tickformat": ".0%", "range": [0, 1.05]} if PANELS[i][0] == "kv" else {}),
        )
        layout[f"xaxis{suffix}"] = dict(
            anchor=f"y{suffix}",
            matches="x" if i else None,
            showticklabels=i == len(PANELS) - 1,
            title=dict(text=x_title) if i == len(PANELS) - 1 else None,
        )
    lines = [
        ("queues", "running", "running", REQUEST_PALETTE[4]),
        ("queues", "waiting", "waiting", REQUEST_PALETTE[0]),
        ("queues", "swapped", "swapped", REQUEST_PALETTE[6]),
        ("kv", "gpu_kv_usage", "GPU KV usage", REQUEST_PALETTE[5]),
        ("kv", "cpu_kv_usage", "CPU KV usage", REQUEST_PALETTE[1]),
        ("kv", "prefix_hit_rate", "prefix-cache hit rate", REQUEST_PALETTE[2]),
        ("tps", "prompt_tps", "prompt throughput", REQUEST_PALETTE[8]),
        ("tps", "gen_tps", "generation throughput", REQUEST_PALETTE[10]),
    ]
    axis_of = {name: "" if i == 0 else str(i + 1) for i, (name, _) in enumerate(PANELS)}
    data = []
    for panel, field, name, color in lines:
        y = _series(samples, field)
        if all(v is None for v in y):
            continue  # the release (or the source) does not report it: no empty line in the legend
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                x=x,
                y=y,
                name=name,
                connectgaps=False,
                line=dict(color=color, width=2),
                marker=dict(size=4),
                xaxis=f"x{axis_of[panel]}",
                yaxis=f"y{axis_of[panel]}",
            )
        )
    preempt = _series(samples, "preemptions")
    if any(v for v in preempt if v):
        data.append(
            dict(
                type="bar",
                x=x,
                y=preempt,
                name="preemptions in the interval",
                marker=dict(color=REQUEST_PALETTE[13]),
                xaxis=f"x{axis_of['preempt']}",
                yaxis=f"y{axis_of['preempt']}",
            )
        )
    facts = [_fact(f) for f in startup]
    annotations = (
        [
            dict(
                text="start-up: " + " · ".join(facts[:2]),
                x=0,
                y=1.0,
                xref="paper",
                yref="paper",
                xanchor="left",
                yanchor="bottom",
                yshift=-2,
                showarrow=False,
                font=dict(size=11, color=c["muted"]),
            )
        ]
        if facts
        else []
    )
    return figure(
        title,
        height,
        dark,
        data,
        annotations=annotations,
        showlegend=True,
        legend=dict(orientation="h", y=-0.1, x=0, xanchor="left", yanchor="top"),
        margin=dict(l=8, r=8, t=52, b=70),
        **layout,
    )


def _fact(f: StartupFact) -> str:
    parts = [
        f"{f.num_gpu_blocks:,} GPU blocks" if f.num_gpu_blocks else "",
        f"{f.kv_cache_tokens:,} KV tokens" if f.kv_cache_tokens else "",
        f"max concurrency {f.max_concurrency:.2f}x" if f.max_concurrency is not None else "",
        "start-up failed: max_model_len over the KV cache" if f.startup_error else "",
    ]
    return ", ".join(p for p in parts if p) or "no capacity figures"
