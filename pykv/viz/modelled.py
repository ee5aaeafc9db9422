"""The modelled target beside the measured figures: the metrics strip's modelled row, the modelled
narration of a step, and the modelled columns of the requests and preemption tables.

Every modelled figure is labelled "modelled <GPU> + <model>" (its label says so, not only its help):
a reader must never take a modelled number for a measured one. Pure functions of plain data.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from pykv.border.snapshot import Snapshot
from pykv.border.units import fmt_bytes, fmt_model_ms
from pykv.gpu_model.schedule import ModelledBill, RequestTimes

MODELLED_ONE_LINE = (
    "The tiny model still produces the tokens; the modelled figures price its real schedule (which "
    "requests run, how many tokens each step prefills and decodes, what each swap moves) on {label}."
)


def modelled_strip(
    label: str, step_ms: float | None, tokens: int | None, clock_ms: float, bills: Sequence[ModelledBill]
) -> list[tuple[str, str, str]]:
    """(label, value, help) of the modelled metrics: this step, its tokens/s, the clock, the preemption bill."""
    tps = tokens / (step_ms * 1e-3) if step_ms and tokens else None
    billed = sum(b.modelled_ms for b in bills)
    delay = sum(b.delay_to_others_ms for b in bills)
    open_bills = [b for b in bills if b.note]
    bill_value = fmt_model_ms(billed) + (f" · {len(open_bills)} open" if open_bills else "")
    open_help = (
        ""
        if not open_bills
        else f" {len(open_bills)} of {len(bills)} bills are 0 or near 0 for now: "
        + "; ".join(f"req {b.request_id} (step {b.step}): {b.note}" for b in open_bills[:4])
        + ("; ..." if len(open_bills) > 4 else "")
        + "."
    )
    return [
        (
            f"Step time (modelled {label})",
            fmt_model_ms(step_ms),
            f"Modelled, not measured: this step's chunks and copies priced on {label} (roofline per phase + overheads; "
            "the formulas are in 'How the modelled figures are computed').",
        ),
        (
            f"Tokens/s (modelled {label})",
            "—" if tps is None else f"{tps:,.0f}",
            f"Modelled: tokens this step / the modelled step time on {label}.",
        ),
        (
            f"Clock (modelled {label})",
            fmt_model_ms(clock_ms),
            f"Modelled: every step so far priced on {label}, added up: how long this schedule would have taken there.",
        ),
        (
            f"Preemption bill (modelled {label})",
            bill_value,
            f"Modelled on {label}: re-prefills and swap copies so far, billed when they happen (a victim's re-prefill "
            f"is billed in the steps that redo it, not when it is preempted); they also delayed the other requests in "
            f"the same steps by {fmt_model_ms(delay)} in all (each waited that long for its token).{open_help}",
        ),
    ]


def modelled_narration(
    snapshot: Snapshot,
    label: str,
    bills: Sequence[ModelledBill],
    per_token_us: float,
    link: str,
) -> list[str]:
    """Sentences on what this step's preemptions, swaps and re-prefills cost on the target (modelled). A swap is
    priced in whole blocks (``ModelledBill.kv_bytes``): what V0 copies, however few of a block's slots are filled."""
    report = snapshot.report
    if report is None:
        return []
    lines = []
    for b in bills:
        if b.step == report.step and b.mode == "recompute":
            lines.append(
                f"Modelled {label}: re-prefilling req {b.request_id}'s {b.tokens} tokens will cost about "
                f"{fmt_model_ms(b.seed_formula_ms)} ({b.tokens} × {per_token_us:.0f} µs per prefill token); "
                "the Preemption bill counts it in the steps that redo it, so it stays unchanged this step."
            )
        elif report.step in b.steps and b.mode == "recompute":
            paid = b.step_ms[b.steps.index(report.step)]
            waited = [r for r in report.scheduled if r != b.request_id]
            who = f"; {', '.join(f'req {r}' for r in waited)} waited for it" if waited else ""
            lines.append(
                f"Modelled {label}: req {b.request_id}'s re-prefill adds {fmt_model_ms(paid)} to this step{who}."
            )
        elif report.step in b.steps and b.mode == "swap":
            paid = b.step_ms[b.steps.index(report.step)]
            way = "out" if b.step == report.step else "back in"
            lines.append(
                f"Modelled {label}: copying req {b.request_id}'s {b.blocks} whole blocks ({b.tokens} tokens; "
                f"{fmt_bytes(b.kv_bytes)} of KV) {way} over {link} takes {fmt_model_ms(paid)}."
            )
    return lines


def with_modelled_times(frame: pd.DataFrame, times: dict[str, RequestTimes], label: str) -> pd.DataFrame:
    """The requests table with modelled TTFT and TPOT columns added after the measured ones."""
    out = frame.copy()
    ids = out["request"].astype(str)
    for name, attr in ((f"TTFT ms (modelled {label})", "ttft_ms"), (f"TPOT ms (modelled {label})", "tpot_ms")):
        values = [getattr(times.get(r), attr, None) if r in times else None for r in ids]
        out.insert(len(out.columns) - 1, name, [None if v is None else round(v, 2) for v in values])
    return out


def with_modelled_bills(frame: pd.DataFrame, bills: Sequence[ModelledBill], label: str) -> pd.DataFrame:
    """The preemption table with each row's modelled bill and the delay it added to the others."""
    out = frame.copy()
    by_key = {(b.step, b.request_id): b for b in bills}
    keys = list(zip(out["step"], out["request_id"].astype(str))) if len(out) else []
    found = [by_key.get(k) for k in keys]
    out[f"bill ms (modelled {label})"] = [None if b is None else round(b.modelled_ms, 3) for b in found]
    out[f"delay to others ms (modelled {label})"] = [
        None if b is None else round(b.delay_to_others_ms, 3) for b in found
    ]
    out["why the bill is 0 or small"] = [(b.note or "") if b is not None else "" for b in found]
    return out
