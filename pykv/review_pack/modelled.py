"""The modelled part of a pack: what a run's (or a sweep's) real schedule would cost on a named GPU and model
(``pykv.gpu_model``), as the app shows it beside the measured figures. Every figure, column and number here
says "modelled" and names the target; none stands in for a measured one.

    RunRecord ──> run_modelled_section ──> the metrics strip at the last step, each preemption's bill, each
                                           request's TTFT/TPOT, the recompute-or-swap crossover (the Sweep
                                           page's figure, at the run's block size), the target and formulas
    a sweep's runs (priced) ──> the Sweep page's modelled charts (pykv.review_pack.sweep)
"""

from __future__ import annotations

import pandas as pd

from pykv.border.csv_safe import csv_text
from pykv.gpu_model import Estimate
from pykv.gpu_model.crossover import crossover_curves
from pykv.gpu_model.explain import FORMULAS, target_facts
from pykv.gpu_model.schedule import ModelledBill, bills, request_times, step_times_ms
from pykv.review_pack.page import Block, PackFigure, Section, definition_list, frame_table, para, table
from pykv.review_pack.record import RunRecord
from pykv.review_pack.text import markdown_html
from pykv.viz import engine_times, preemptions_frame, requests_frame
from pykv.viz.modelled import MODELLED_ONE_LINE, modelled_strip, with_modelled_bills, with_modelled_times
from pykv.viz.modelled_sweep import crossover_figure
from pykv.viz.tables import ENGINE_TTFT

MAX_ROWS = 500  # rows of one modelled table in the page (the CSVs in the zip have them all)


def crossover_pack_figure(est: Estimate, block_size: int, name: str = "modelled-crossover") -> PackFigure:
    """The Sweep page's crossover chart: its title and subtitle say it is modelled, and on what; it prices one victim
    of each length on the target, so it is the same whatever was run, and its image carries no run link."""
    return PackFigure(
        name,
        f"The Sweep page's crossover chart at block size {block_size}: it depends on the target and the block size "
        "only, not on the run.",
        crossover_figure(crossover_curves(est, block_size)),
        linked=False,
    )


def target_blocks(est: Estimate) -> list[Block]:
    """The target named in full, and how the modelled figures are computed (the page's expander)."""
    return [
        "<h3>The target</h3>",
        definition_list(target_facts(est)),
        f"<h3>How the modelled figures are computed (modelled {est.label})</h3>",
        markdown_html(FORMULAS),
    ]


class RunModelled:
    """A run priced on its record's target: step times, bills, request times (computed once)."""

    def __init__(self, r: RunRecord) -> None:
        self.record = r
        self.est = r.target.estimate()
        self.reports = [s.report for s in r.snapshots[1:] if s.report is not None]
        self.step_ms = step_times_ms(self.est, self.reports, r.last.block_size)
        self.bills: list[ModelledBill] = bills(self.est, self.reports, r.last.block_size)

    @property
    def label(self) -> str:
        return self.est.label

    def strip(self) -> list[tuple[str, str, str]]:
        """The Playground's modelled metrics row at the run's last step."""
        last = self.record.last
        step_ms = self.step_ms[-1] if self.step_ms and last.report else None
        tokens = last.report.num_batched_tokens if last.report else None
        return modelled_strip(self.label, step_ms, tokens, sum(self.step_ms), self.bills)

    def requests(self) -> pd.DataFrame:
        """Each request's modelled TTFT and TPOT (the Playground's columns), beside its engine-time ones."""
        times = request_times(self.record.snapshots, self.step_ms)
        frame = with_modelled_times(
            requests_frame(self.record.last, engine_times(self.record.snapshots)), times, self.label
        )
        return frame[
            [
                "request",
                "status",
                "output tokens",
                "preemptions",
                ENGINE_TTFT,
                f"TTFT ms (modelled {self.label})",
                f"TPOT ms (modelled {self.label})",
            ]
        ]

    def preemptions(self) -> pd.DataFrame:
        """Each preemption's modelled bill, the delay it made the others wait, and why a bill is 0 or small (a swap
        is priced in its whole blocks, not its tokens)."""
        frame = with_modelled_bills(preemptions_frame(self.record.last), self.bills, self.label)
        keep = [
            "step",
            "request_id",
            "mode",
            "num_blocks",
            "num_tokens",
            f"bill ms (modelled {self.label})",
            f"delay to others ms (modelled {self.label})",
            "why the bill is 0 or small",
        ]
        return frame[keep].rename(columns={"request_id": "victim", "num_blocks": "blocks", "num_tokens": "tokens"})


def run_modelled_section(m: RunModelled, prefix: str = "", sid: str = "modelled") -> Section:
    r, est = m.record, m.est
    blocks: list[Block] = [
        para(f"Modelled, not measured, on {m.label}. " + MODELLED_ONE_LINE.format(label=f"modelled {m.label}")),
        "<h3>The Playground's modelled row, at the last step</h3>",
        table(["metric", "value", "what it is"], m.strip(), "modelled"),
    ]
    bills_frame = m.preemptions()
    if len(bills_frame):
        notes = int((bills_frame["why the bill is 0 or small"] != "").sum())
        blocks += [
            f"<h3>Each preemption's bill, modelled on {m.label}</h3>",
            para(
                f"{len(bills_frame)} preemptions priced on {m.label}"
                + (f"; {notes} bills are 0 or small, and the last column says why" if notes else "")
                + ". A swap is priced in its whole blocks (V0 copies a block whole), a recompute in the tokens it "
                "redoes. The measured costs are in the Preemption bill section."
            ),
            frame_table(bills_frame.head(MAX_ROWS), "modelled wide"),
        ]
    requests = m.requests()
    blocks += [
        f"<h3>Each request's TTFT and TPOT, modelled on {m.label}</h3>",
        para(
            f"The run's own steps priced on {m.label}, added up from each request's arrival; the engine-time "
            f"(measured on {r.last.device}) columns are in the Requests section."
        ),
        frame_table(requests.head(MAX_ROWS), "modelled wide"),
    ]
    blocks += [crossover_pack_figure(est, r.last.block_size, f"{prefix}modelled-crossover")]
    blocks += target_blocks(est)
    return Section(sid, f"Modelled on {m.label}", tuple(blocks))


def run_modelled_csvs(m: RunModelled, prefix: str = "") -> dict[str, str]:
    return {
        f"{prefix}modelled_requests.csv": csv_text(m.requests()),
        f"{prefix}modelled_preemptions.csv": csv_text(m.preemptions()),
    }
