"""The review pack of a real server's diagnosis: the release and what it can show, start-up facts, the timeline,
the findings with evidence and fixes, the lab replay (what the scaling keeps and cannot) and the what-if, as
one offline page (``python -m pykv diagnose FILE --out report.html``, or the Your server page's button)."""

from __future__ import annotations

from typing import Sequence

from pykv.bridge import Diagnosis
from pykv.gpu_model import Estimate
from pykv.lab.server_replay import ReplayPlan
from pykv.lab.server_scale import at_server_scale
from pykv.lab.what_if import WHAT_IF_ROWS, LabFix, ReplayOutcome
from pykv.review_pack.page import PackFigure, ReviewPack, Section, code_block, definition_list, para, table
from pykv.viz.server_timeline import server_timeline_figure


def _release(d: Diagnosis) -> Section:
    blocks = [
        para(f"Release: {d.release.text}."),
        *[para(note) for note in d.visibility],
        para(
            f"Preemptions: {d.preemption_text}; {d.lines_read:,} lines read, {d.lines_skipped:,} skipped "
            "(not known to the reader)."
        ),
    ]
    if d.startup:
        keys = list(d.startup[0].to_json_dict())
        blocks.append(
            table(keys + ["start-up failed"], [list(f.to_json_dict().values()) + [f.startup_error] for f in d.startup])
        )
    blocks += [para(note, "note") for note in d.notes]
    return Section("server", "Your server", tuple(blocks))


def _timeline(d: Diagnosis) -> Section | None:
    if not d.samples:
        return None
    fig = server_timeline_figure(d.samples, d.startup, height=560)
    return Section(
        "server-timeline",
        "Timeline",
        (PackFigure("server_timeline", "The server's own stats lines (or scrapes), as read", fig),),
    )


def _findings(d: Diagnosis) -> Section:
    if not d.findings:
        return Section("findings", "Findings", (para("Nothing here looks like KV-cache trouble."),))
    blocks: list = []
    for f in d.findings:
        blocks += [
            para(f"{f.title} ({f.confidence} confidence: {f.why})"),
            code_block("\n".join(f.evidence[:12])),
            para(f"Fix, in the tuning order: {f.fix}"),
        ]
    return Section("findings", "Findings", tuple(blocks))


def _replay(
    d: Diagnosis, plan: ReplayPlan, fixes: Sequence[LabFix], outcomes: Sequence[ReplayOutcome], est: Estimate | None
) -> Section:
    c = plan.config
    blocks: list = [
        para(plan.profile_reason + "."),
        definition_list(
            [
                (
                    "lab config",
                    f"vllm_profile={c.vllm_profile}, {c.num_gpu_blocks} blocks x "
                    f"{c.block_size} tokens, max_num_seqs={c.max_num_seqs}, "
                    f"{len(plan.workload.requests)} requests",
                ),
                ("keeps", "; ".join(plan.keeps)),
                ("cannot keep", "; ".join(plan.cannot_keep)),
            ]
        ),
    ]
    if outcomes:
        blocks.append(
            para(
                "What if (measured in the lab; throughput "
                + outcomes[0].target_label
                + "): "
                + "; ".join(
                    f"fix {i}: in the lab {fix.label}; on your server {at_server_scale(fix, plan, d, est)}"
                    for i, fix in enumerate(fixes, 1)
                )
            )
        )
        heads = ["", "as planned"] + [f"fix {i}" for i in range(1, len(outcomes))]
        blocks.append(
            table(
                heads,
                [[label] + [fmt.format(getattr(o, field)) for o in outcomes] for label, field, fmt in WHAT_IF_ROWS],
            )
        )
    return Section("replay", "Replay in the lab", tuple(blocks))


def server_pack(
    d: Diagnosis,
    plan: ReplayPlan,
    fixes: Sequence[LabFix] = (),
    outcomes: Sequence[ReplayOutcome] = (),
    est: Estimate | None = None,
) -> ReviewPack:
    """``est``: the modelled target the what-if was priced on (its fixes then said in GiB of its KV too)."""
    sections = [_release(d), _timeline(d), _findings(d), _replay(d, plan, fixes, outcomes, est)]
    subtitle = (
        f"What a vLLM server ({d.release.text}) printed and scraped, read by pykv: {len(d.samples)} samples, "
        f"{len(d.findings)} findings, and the same pressure replayed in the lab."
    )
    return ReviewPack("pykv: your server", subtitle, tuple(s for s in sections if s is not None))
