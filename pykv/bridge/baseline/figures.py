"""A diagnosis's figures as a baseline keeps them, and how each reads for a person.

A preemption *rate* needs a window: two timed points (stats lines, scrapes) and a count between them. A counter read
once (one /metrics scrape, vllm:num_preemptions_total) or a count with no time span is a *floor since start-up*
("at least 4,821 since start-up"): it is kept, and shown, but never divided into a rate nor compared as one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pykv.bridge.diagnosis import Diagnosis


def figures(diagnosis: Diagnosis) -> dict:
    """Preemptions per minute (None when nothing counts them, or without a time span: then the count is a floor
    since start-up, ``preemptions_since_start``), mean / peak GPU KV usage, mean generation throughput (None when
    not seen)."""
    samples = diagnosis.samples
    times = [s.seconds for s in samples if s.seconds is not None]
    minutes = (max(times) - min(times)) / 60.0 if len(times) >= 2 else None
    usage = [s.gpu_kv_usage for s in samples if s.gpu_kv_usage is not None]
    gen = [s.gen_tps for s in samples if s.gen_tps is not None]
    counted = diagnosis.preemptions_counted
    windowed = bool(minutes) and counted and not diagnosis.preemptions_since_start
    return {
        "preemptions_per_min": round(diagnosis.preemptions_at_least / minutes, 3) if windowed and minutes else None,
        "preemptions_at_least": diagnosis.preemptions_at_least if counted else None,
        "preemptions_since_start": bool(counted and not windowed),
        "window_minutes": round(minutes, 3) if minutes else None,
        "mean_gpu_kv_usage": round(sum(usage) / len(usage), 4) if usage else None,
        "peak_gpu_kv_usage": max(usage) if usage else None,
        "mean_gen_tps": round(sum(gen) / len(gen), 2) if gen else None,
    }


@dataclass(frozen=True)
class FigureSpec:
    key: str
    label: str  # what a person reads
    show: Callable[[float], str]
    lower_is_better: bool | None  # None: shown, not judged
    missing: str  # why it can be missing, said where it is


def _per_min(v: float) -> str:
    return f"{v:,.1f} per minute" if v < 100 else f"{v:,.0f} per minute"


FIGURES = (
    FigureSpec(
        "preemptions_per_min",
        "preemptions per minute",
        _per_min,
        True,
        "no preemption rate (nothing read counts preemptions over a time span: a V1 log alone prints no count, one "
        "/metrics scrape gives a count since start-up, not a rate)",
    ),
    FigureSpec(
        "mean_gen_tps",
        "generation throughput (mean)",
        lambda v: f"{v:,.0f} tokens/s",
        False,
        "no generation throughput (no stats line or scrape with a throughput)",
    ),
    FigureSpec("mean_gpu_kv_usage", "GPU KV cache usage (mean)", lambda v: f"{v:.1%}", None, "no GPU KV cache usage"),
    FigureSpec("peak_gpu_kv_usage", "GPU KV cache usage (peak)", lambda v: f"{v:.1%}", None, "no GPU KV cache usage"),
)


def preemption_count_text(figs: dict) -> str:
    """The count of preemptions as read: a floor since start-up, or over the window; "not counted" when nothing
    counts them."""
    count = figs.get("preemptions_at_least")
    if count is None:
        return "not counted"
    if figs.get("preemptions_per_min") is None:
        return f"at least {count:,.0f} since start-up (a count, not a rate)"
    minutes = figs.get("window_minutes")
    return f"{count:,.0f} in {minutes:,.1f} minutes" if minutes else f"{count:,.0f} over the window read"
