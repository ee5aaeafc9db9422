"""One run as review-pack sections: its configuration (and the vLLM command that matches it), its
workload and link, the timeline, the block grids at the last step and at the first preemptions, the
preemption bill, the requests, the same schedule modelled on the record's target GPU (labelled so), the
metrics at the end and the log lines; and the run's CSVs and final snapshot for the zip. Built from a
``RunRecord``."""

from __future__ import annotations

import pandas as pd

from pykv.border.csv_safe import csv_text
from pykv.border.metric_names import (
    GENERATION_TOKENS,
    PYKV_NUM_PREEMPTIONS,
    RECOMPUTED_TOKENS,
    SWAPPED_OUT_BYTES,
    VLLM_NUM_PREEMPTIONS,
)
from pykv.border.snapshot import Snapshot, diff_snapshots
from pykv.border.units import fmt_bytes
from pykv.review_pack.config_section import config_section
from pykv.review_pack.deep_link import RELATIVE_NOTE
from pykv.review_pack.history import GRID_PREEMPTIONS
from pykv.review_pack.modelled import RunModelled, run_modelled_csvs, run_modelled_section
from pykv.review_pack.page import (
    HALF_WIDTH_PX,
    Figures,
    PackFigure,
    ReviewPack,
    Section,
    code_block,
    definition_list,
    frame_table,
    link_block,
    para,
    table,
)
from pykv.review_pack.record import RunRecord
from pykv.viz import block_grid_figure, engine_times, preemptions_frame, requests_frame
from pykv.viz.timeline import timeline_figure

MAX_LOG_LINES = 5_000  # log lines written into the page (the run's own count is said)
TEXT_CHARS = 40  # characters of a request's text shown in the tables
MAX_ROWS = 500  # rows of one table in the page (the CSVs in the zip have them all)
TIMELINE_HEIGHT = 440  # six panels at the page's width: at 360 a panel was a 20 px sliver


# ---- the numbers on the first page ---------------------------------------------------------------


def _preemption_steps(snapshots: tuple[Snapshot, ...]) -> list[int]:
    return [i for i, s in enumerate(snapshots) if s.report and s.report.preempted]


def summary_html(r: RunRecord) -> str:
    last = r.last
    p = r.config.profile
    finished = sum(req.status.startswith("finished") for req in last.requests)
    engine_s = sum(s.report.step_time_s for s in r.snapshots if s.report)
    items = [
        ("vLLM release", p.label()),
        ("model", r.config.model),
        ("device (measured on)", last.device),
        ("steps", f"{last.step}" + ("" if r.done else " (the run had not finished)")),
        ("requests", f"{len(last.requests)} arrived, {finished} finished"),
        (
            "preemptions",
            f"{last.metric(PYKV_NUM_PREEMPTIONS):.0f} ({VLLM_NUM_PREEMPTIONS.sample} "
            f"{last.metric(VLLM_NUM_PREEMPTIONS):.0f})",
        ),
        ("recomputed tokens", f"{last.metric(RECOMPUTED_TOKENS):.0f}"),
        ("swapped out", fmt_bytes(last.metric(SWAPPED_OUT_BYTES))),
        ("output tokens", f"{last.metric(GENERATION_TOKENS):.0f}"),
        ("engine time", f"{engine_s:.3f} s measured on {last.device} (the steps' own time)"),
        ("modelled on", f"{r.target.estimate().label} (modelled, not measured: the schedule priced on that GPU)"),
    ]
    if r.view_step is not None and r.view_step != last.step:
        items.append(("on screen", f"step {r.view_step} (the pack covers the whole history, to step {last.step})"))
    html = definition_list(items)
    if r.note:
        html += para(r.note, "fail")
    return html + para("Measured times are this machine's; PCIe figures are modelled, not measured.", "muted")


# ---- sections --------------------------------------------------------------------------------------


def rows_cut(total: int) -> str:
    return f"The first {MAX_ROWS:,} of {total:,} rows; the zip has them all."


def workload_section(r: RunRecord, sid: str = "workload") -> Section:
    blocks: list = []
    w = r.workload
    if w is None:
        blocks.append(para("No workload: requests were added by hand."))
    else:
        origin = f"preset {r.preset!r}" if r.preset else "a workload file or a lesson"
        blocks.append(para(f"Workload {w.name!r} ({origin}), seed {w.seed}: {len(w.requests)} requests."))
        ordered = sorted(w.requests, key=lambda q: q.arrival_step)
        rows = []
        for i, q in enumerate(ordered[:MAX_ROWS]):
            prompt = q.prompt if q.prompt is not None else f"{len(q.prompt_token_ids or ())} token ids"
            shown = prompt if len(prompt) <= 48 else prompt[:47] + "…"
            rows.append(
                (
                    i,
                    q.request_id or "auto",
                    q.arrival_step,
                    q.max_tokens,
                    "yes" if q.ignore_eos else "no",
                    len(q.prompt) if q.prompt is not None else None,
                    shown.replace("\n", "⏎"),
                )
            )
        blocks.append(table(["#", "id", "arrival step", "max_tokens", "ignore_eos", "prompt chars", "prompt"], rows))
        blocks += [para(rows_cut(len(ordered)), "muted")] if len(ordered) > MAX_ROWS else []
    tokens = [q.num_prompt_tokens for q in r.last.requests]
    if tokens:
        blocks.append(
            para(
                f"Prompt lengths in tokens: {min(tokens)} to {max(tokens)}, {sum(tokens)} in all "
                f"({len(tokens)} requests arrived)."
            )
        )
    blocks.append("<h3>Link</h3>")
    link = r.app_link if r.app_link is not None else r.link
    if link is None:
        blocks.append(
            para(
                "No Playground link reproduces this run: the workload is not a preset, and a link can "
                "only name a preset."
            )
        )
    else:
        replays = "the Playground, replaying the run to its last step"
        blocks.append(para(f"Opens {'the same view in the app' if r.app_link is not None else replays}:"))
        blocks.append(link_block(link))
        blocks += [] if r.lab_root else [para(RELATIVE_NOTE, "muted")]
    blocks += [para(note, "muted") for note in (r.link_caveats() if r.app_link is None else [])]
    return Section(sid, "Workload", tuple(blocks))


def timeline_section(r: RunRecord, prefix: str = "", sid: str = "timeline") -> Section:
    fig = PackFigure(
        f"{prefix}timeline",
        f"Every step of the run, 0 to {r.last.step}.",
        timeline_figure(r.snapshots, len(r.snapshots) - 1, height=TIMELINE_HEIGHT),
    )
    return Section(sid, "Timeline", (fig,))


def changed_blocks(previous: Snapshot | None, snapshot: Snapshot) -> set[tuple[str, int]] | None:
    """Blocks whose state, owners, reference count, fill or hash changed since ``previous`` (a free block that only
    moved in the free queue has not changed, for a reader of a still picture)."""
    return None if previous is None else diff_snapshots(previous, snapshot).blocks  # the app's own rule


def grid_figures(snapshot: Snapshot, previous: Snapshot | None, name: str, caption: str) -> list[PackFigure]:
    """The device pool's grid at ``snapshot`` (blocks changed since ``previous`` outlined), and the CPU pool's."""
    changed = changed_blocks(previous, snapshot)
    step = snapshot.step

    def grid(pool: str):  # its legend wrapped to the page's half width (the narrowest it is drawn at)
        return block_grid_figure(snapshot, pool, changed, width=HALF_WIDTH_PX)

    figs = [PackFigure(f"{name}-gpu", caption, grid("gpu"), half=True, step=step)]
    if any(b.pool == "cpu" for b in snapshot.blocks):  # its own legend too: each image is pasted alone
        figs.append(PackFigure(f"{name}-cpu", caption + " CPU swap pool.", grid("cpu"), half=True, step=step))
    return figs


def _preempted_text(s: Snapshot) -> str:
    preempted = s.report.preempted if s.report else []
    return "; ".join(f"req {p.request_id} ({p.mode}{', fell back' if p.fallback else ''})" for p in preempted)


def grids_section(r: RunRecord, prefix: str = "", sid: str = "grids") -> Section:
    snaps, picks = r.snapshots, _preemption_steps(r.snapshots)[:GRID_PREEMPTIONS]
    figs = []
    for i in picks:
        figs += grid_figures(
            snaps[i],
            snaps[i - 1],
            f"{prefix}grid-step-{snaps[i].step}",
            f"Step {snaps[i].step}: {_preempted_text(snaps[i])} preempted; outlined: blocks changed.",
        )
    last = len(snaps) - 1
    figs += grid_figures(
        snaps[last], snaps[last - 1] if last else None, f"{prefix}grid-last", f"Step {snaps[last].step}, the last."
    )
    total = len(_preemption_steps(snaps))
    intro = (
        f"The device KV pool at the first {len(picks)} of the {total} steps that preempted, and at the last step."
        if total
        else "No step preempted; the device KV pool at the last step."
    )
    return Section(sid, "Block grids", (para(intro), Figures(tuple(figs))))


def bill_frame(snapshot: Snapshot) -> pd.DataFrame:
    """Every preemption with its measured cost (swap: copy out + in; recompute: the re-prefill's share of forward
    time) and, for swaps, the same copies modelled over PCIe."""
    rows = []
    for p in snapshot.preemptions:
        measured = ((p.swap_out_s or 0.0) + (p.swap_in_s or 0.0)) if p.mode == "swap" else p.recompute_s
        modelled = ((p.modelled_pcie_out_s or 0.0) + (p.modelled_pcie_in_s or 0.0)) if p.mode == "swap" else None
        mode = p.mode + (" (swap fell back)" if p.fallback else "")  # fallback names the mode it fell back to
        rows.append(
            {
                "step": p.step,
                "victim": p.request_id,
                "mode": mode,
                "blocks": p.num_blocks,
                "tokens": p.num_tokens,
                "KiB": round(p.num_bytes / 1024, 1),
                "recomputed tokens": p.recomputed_tokens,
                "measured ms": measured * 1e3,
                "modelled PCIe ms": None if modelled is None else modelled * 1e3,
                "steps lost": p.steps_lost,
            }
        )
    columns = [
        "step",
        "victim",
        "mode",
        "blocks",
        "tokens",
        "KiB",
        "recomputed tokens",
        "measured ms",
        "modelled PCIe ms",
        "steps lost",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    # whole numbers beside a dash (not yet known): as floats they printed "9.00" and "10.0"
    frame["steps lost"] = pd.Series([r["steps lost"] for r in rows], dtype=object)
    return frame


def bill_section(r: RunRecord, sid: str = "bill") -> Section:
    frame = bill_frame(r.last)
    if frame.empty:
        return Section(sid, "Preemption bill", (para("No preemption in this run."),))
    measured = frame["measured ms"].sum()
    modelled = frame["modelled PCIe ms"].dropna()
    text = (
        f"{len(frame)} preemptions: {frame['tokens'].sum()} tokens lost, {measured:.2f} ms measured on "
        f"{r.last.device}"
        + (f"; the swaps' copies modelled over PCIe: {modelled.sum():.3f} ms" if len(modelled) else "")
        + ". A cost still being paid (a victim not yet back) shows what is known."
    )
    cut = [para(rows_cut(len(frame)), "muted")] if len(frame) > MAX_ROWS else []
    return Section(sid, "Preemption bill", (para(text), frame_table(frame.head(MAX_ROWS), "bill wide"), *cut))


def requests_table_frame(r: RunRecord) -> pd.DataFrame:
    """The final requests table with each finished request's TPOT and finish reason (from the step reports)."""
    engine = engine_times(r.snapshots)
    frame = requests_frame(r.last, engine)
    outputs = {o.request_id: o for s in r.snapshots if s.report for o in s.report.finished}
    tpot = [
        None if rid not in engine or (ms := engine[rid].tpot_ms) is None else round(ms, 3) for rid in frame["request"]
    ]
    frame.insert(8, "TPOT ms (engine time)", tpot)
    frame.insert(9, "finish", [outputs[rid].finish_reason if rid in outputs else None for rid in frame["request"]])
    return frame


def requests_section(r: RunRecord, sid: str = "requests") -> Section:
    frame = requests_table_frame(r)
    shown = frame.assign(
        **{
            "text so far": [
                t if len(t) <= TEXT_CHARS else t[: TEXT_CHARS - 1] + "…"
                for t in frame["text so far"].str.replace("\n", "⏎")
            ]
        }
    )
    cut = [para(rows_cut(len(shown)), "muted")] if len(shown) > MAX_ROWS else []
    return Section(
        sid,
        "Requests",
        (
            para(
                f"TTFT and TPOT are engine time: the step times measured on {r.last.device}, "
                "summed from each request's arrival (pauses between steps not counted)."
            ),
            frame_table(shown.head(MAX_ROWS), "requests wide"),
            *cut,
        ),
    )


def metrics_section(r: RunRecord, sid: str = "metrics") -> Section:
    return Section(
        sid,
        "Metrics at the end",
        (
            para(f"The engine's Prometheus text after step {r.last.step}, as a /metrics endpoint would serve it."),
            code_block(r.metrics_text, "metrics"),
        ),
    )


def log_lines(snapshots) -> list[str]:
    return [f"[step {s.step}] {line}" for s in snapshots for line in (s.report.log_lines if s.report else [])]


def logs_section(r: RunRecord, sid: str = "logs") -> Section:
    lines = log_lines(r.snapshots)
    if not lines:
        return Section(sid, "Log lines", (para("The run wrote no log line."),))
    cut = f" (the first {MAX_LOG_LINES:,} of {len(lines):,})" if len(lines) > MAX_LOG_LINES else ""
    return Section(
        sid,
        "Log lines",
        (para(f"vLLM-style log lines, by step{cut}."), code_block("\n".join(lines[:MAX_LOG_LINES]), "logs")),
    )


def run_sections(r: RunRecord, prefix: str = "", modelled: RunModelled | None = None) -> list[Section]:
    """Every section of one run; ``prefix`` keeps the anchors and file names of two runs in one pack apart;
    ``modelled``: the run priced on its target, where already made (else it is made here)."""
    return [
        config_section(r.config, r.last.bytes_per_block, prefix + "config", max_model_len=r.max_model_len),
        workload_section(r, prefix + "workload"),
        timeline_section(r, prefix, prefix + "timeline"),
        grids_section(r, prefix, prefix + "grids"),
        bill_section(r, prefix + "bill"),
        requests_section(r, prefix + "requests"),
        run_modelled_section(modelled or RunModelled(r), prefix, prefix + "modelled"),
        metrics_section(r, prefix + "metrics"),
        logs_section(r, prefix + "logs"),
    ]


def run_files(
    r: RunRecord,
    prefix: str = "",
    modelled: RunModelled | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """(CSVs, other files) of a run for the zip: requests, preemptions, their modelled columns, the final snapshot's
    JSON, the workload."""
    csvs = {
        f"{prefix}requests.csv": csv_text(requests_table_frame(r)),
        f"{prefix}preemptions.csv": csv_text(preemptions_frame(r.last)),
        **run_modelled_csvs(modelled or RunModelled(r), prefix),
    }
    files = {f"{prefix}snapshot_step_{r.last.step}.json": r.last.to_json()}
    if r.workload is not None:  # python -m pykv run/report --workload workload.json runs it again
        files[f"{prefix}workload.json"] = r.workload.to_json()
    return csvs, files


def run_pack(r: RunRecord, title: str = "pykv review pack") -> ReviewPack:
    p = r.config.profile
    subtitle = (
        f"A run of {r.last.step} steps under vLLM {p.release} rules ({p.name}), {r.config.num_gpu_blocks} "
        f"blocks x {r.config.block_size} tokens, preemption by {r.config.preemption_mode}, on {r.last.device}."
    )
    modelled = RunModelled(r)
    csvs, files = run_files(r, modelled=modelled)
    return ReviewPack(
        title,
        subtitle,
        tuple(run_sections(r, modelled=modelled)),
        summary=summary_html(r),
        link=r.link,
        csvs=csvs,
        files=files,
    )
