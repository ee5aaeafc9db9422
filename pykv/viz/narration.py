"""This step in plain English, and the metrics strip: pure functions of a Snapshot.

Measured figures name the device they were measured on; modelled PCIe figures say "modelled".
"""

from __future__ import annotations

from pykv.border.metric_names import (
    PYKV_NUM_PREEMPTIONS,
    RECOMPUTE_TAX,
    RECOMPUTED_TOKENS,
    SWAPPED_OUT_BYTES,
    VLLM_NUM_PREEMPTIONS,
)
from pykv.border.snapshot import Snapshot
from pykv.border.step_report import AdmissionWait, OffloadTransfer, PreemptionView
from pykv.border.units import fmt_bytes


def fmt_ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.2f} ms"


def describe_preemption(p: PreemptionView, block_size: int) -> str:
    rid = p.request_id
    if p.mode == "abort":
        return f"req {rid} aborted: {p.reason or 'no room left to preempt it into'}."
    if p.mode == "swap":
        text = (
            f"req {rid} swapped out: {p.num_blocks} blocks, {fmt_bytes(p.num_bytes)} copied, "
            f"{fmt_ms(p.swap_out_s)} measured on {p.device}"
        )
        if p.modelled_pcie_out_s is not None:
            text += f" (this model's {fmt_bytes(p.num_bytes)} modelled over PCIe: {fmt_ms(p.modelled_pcie_out_s)})"
        return text + "."
    text = f"req {rid} preempted by recompute: {p.num_blocks} blocks freed, {p.num_tokens} tokens to recompute"
    if p.fallback == "recompute":
        text += f" (swap fell back to recompute: {p.reason or 'CPU pool full'})"
    return text + "."


def describe_wait(w: AdmissionWait, snapshot: Snapshot) -> str:
    """Why the head of the waiting queue was not admitted: the release's rule, with the scheduler's numbers."""
    p = snapshot.profile
    vllm = f"vLLM {p.release}" if p is not None else "this release"
    rid = f"req {w.request_id} waits"
    kept = f", {w.watermark_blocks} of them kept free by the watermark" if w.watermark_blocks else ""
    blocks = f"it needs {counted(w.blocks_needed or 0, 'free block')}{kept}; {w.blocks_free} are free"
    if w.rule == "whole_input":
        text = f"{rid}: {vllm} admits a request only once its whole input ({w.tokens} tokens) fits the free blocks "
        text += f"(scheduler_reserve_full_isl): {blocks}"
    elif w.rule == "chunk_blocks":
        text = f"{rid}: its next chunk ({counted(w.tokens or 0, 'token')}) does not fit: {blocks}"
    elif w.rule == "whole_prompt":
        text = f"{rid}: {vllm} reserves every block of a sequence ({w.tokens} tokens) at admission: {blocks}"
    elif w.rule == "max_num_seqs":
        text = f"{rid}: max_num_seqs={w.limit} sequences are running already"
    elif w.rule == "token_budget" and w.tokens:
        text = f"{rid}: it needs {w.tokens} tokens of this step's budget, {w.limit} are left (max_num_batched_tokens)"
    elif w.rule == "token_budget":
        text = f"{rid}: this step's token budget (max_num_batched_tokens) is spent"
    elif w.rule == "prompt_over_budget":
        text = (
            f"{rid}: chunked prefill is off and its prompt ({w.tokens} tokens) is longer than the {w.limit} "
            "tokens left in this step's budget"
        )
    elif w.rule == "preempted_this_step":
        text = f"{rid}: {vllm} admits nobody in a step that preempted"
    else:  # swapped_first
        text = f"{rid}: {vllm} admits no new prompt while requests are swapped out (they come back first)"
    waiting = snapshot.queues.get("waiting", [])
    behind = len(waiting) - 1 if w.request_id in waiting else 0
    if behind > 0:
        text += f"; {counted(behind, 'more request')} wait behind it (admission stops at the first it cannot take)"
    return text + "."


def describe_offload(t: OffloadTransfer) -> str:
    where = "device → CPU tier" if t.direction == "store" else "CPU tier → device"
    verb = "stored" if t.direction == "store" else "loaded"
    rate = f", {t.bandwidth / 1e9:.2f} GB/s" if t.bandwidth else ""
    return (
        f"{t.num_blocks} block(s) {verb} ({where}): {fmt_bytes(t.num_bytes)}, {fmt_ms(t.seconds)} measured on "
        f"{t.device}{rate} (these bytes modelled over PCIe: {fmt_ms(t.modelled_pcie_s)})."
    )


def counted(n: int, noun: str) -> str:
    """ "1 token", "2 tokens", "0 decodes"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def narrate(snapshot: Snapshot, waits: bool = True) -> list[str]:
    """One sentence per event of the step that led to ``snapshot`` (its ``report``); ``waits``: last, why the head of
    the waiting queue was not admitted."""
    report = snapshot.report
    if report is None:
        waiting = len(snapshot.queues.get("waiting", []))
        queued = f"; {waiting} request(s) waiting" if waiting else ""
        return [f"Step {snapshot.step}: nothing has run yet{queued}."]  # the page says which control steps it
    chunks = report.chunks
    prefills = [c for c in chunks if c.is_prefill]
    decodes = len(chunks) - len(prefills)
    lines = [
        f"Step {report.step} ran {counted(len(chunks), 'request')}: {counted(len(prefills), 'prefill chunk')} and "
        f"{counted(decodes, 'decode')}, {counted(report.num_batched_tokens, 'token')} in {fmt_ms(report.step_time_s)} "
        f"(forward {fmt_ms(report.forward_time_s)}, measured on {report.device})."
    ]
    if not chunks:
        lines[0] = f"Step {report.step} ran nothing (no request could be scheduled)."
    for c in prefills:
        if c.orphaned:
            continue
        if c.start == 0 or c.num_cached_tokens:
            note = f"req {c.request_id} prefilled tokens {c.start}–{c.start + c.num_new_tokens - 1}"
            if c.num_cached_tokens:
                note += (
                    f", after reusing {c.num_cached_tokens} cached prompt tokens "
                    f"({c.num_cached_tokens // max(1, snapshot.block_size)} blocks) from the prefix cache"
                )
            lines.append(note + ".")
    for c in chunks:
        if c.num_loaded_tokens:
            lines.append(
                f"req {c.request_id} loaded {c.num_loaded_tokens} tokens "
                f"({c.num_loaded_tokens // max(1, snapshot.block_size)} blocks) from the CPU offloading tier "
                "instead of recomputing them."
            )
    for cow in report.copy_on_write:
        lines.append(
            f"req {cow.request_id} copied shared block {cow.src_block} to block {cow.dst_block} before appending "
            "to it (copy on write): the other sequences keep the original."
        )
    for p in report.preempted:
        lines.append(describe_preemption(p, snapshot.block_size))
        if p.why is not None and p.mode != "abort":
            lines.append(f"req {p.request_id} was chosen because {p.why}.")
    for c in chunks:
        if c.orphaned:
            lines.append(
                f"req {c.request_id} was scheduled earlier in this step, then preempted: vLLM 0.10.2 leaves "
                f"its {counted(c.num_new_tokens, 'token')} in the batch, charged to the budget, and counts "
                f"them as computed, so it will resume at token {c.num_new_tokens} without their KV "
                "(pykv computes nothing for them; vLLM 0.11.1 takes the chunk back)."
            )
    lines += [describe_offload(t) for t in report.offload]
    if report.recomputed_tokens and report.recompute_tax is not None:
        lines.append(
            f"Recompute tax this step: {report.recomputed_tokens} of the prefill tokens "
            f"({report.recompute_tax:.0%}) recomputed KV a preemption had dropped."
        )
    for p in report.swapped_in:
        text = (
            f"req {p.request_id} swapped back in: {p.num_blocks} blocks, {fmt_bytes(p.num_bytes)}, "
            f"{fmt_ms(p.swap_in_s)} measured on {p.device}"
        )
        if p.modelled_pcie_in_s is not None:
            text += f" (this model's {fmt_bytes(p.num_bytes)} modelled over PCIe: {fmt_ms(p.modelled_pcie_in_s)})"
        lines.append(text + ".")
        view = next((r for r in snapshot.requests if r.request_id == p.request_id), None)
        # two or more tokens still to compute after the step: it came back chunked (one left may be a new token)
        if view is not None and view.num_computed_tokens + 1 < view.num_prompt_tokens + view.num_output_tokens:
            lines.append(
                f"req {p.request_id} came back with only part of the tokens it lacks: vLLM 0.6.3 never "
                "chunks a swap-in, and with more left than max_num_batched_tokens it would have stayed "
                "swapped for good; pykv chunks it once nothing else runs."
            )
    for parent, children in report.forked.items():
        lines.append(
            f"req {parent} forked {len(children)} sequence(s) ({', '.join(children)}) on its first token: "
            f"they share all its blocks (reference count {len(children) + 1} each)."
        )
    for out in report.finished:
        text = f"req {out.request_id} finished ({out.finish_reason}): {len(out.output_token_ids)} tokens"
        if out.num_preemptions:
            text += f", preempted {out.num_preemptions}× on the way"
        if out.message:
            text += f" — {out.message}"
        lines.append(text + ".")
    if waits and report.head_wait is not None:
        lines.append(describe_wait(report.head_wait, snapshot))
    return lines


def metrics_strip(snapshot: Snapshot) -> list[tuple[str, str, str]]:
    """(label, value, help) for the metrics strip, labelled with the measuring device."""
    device, report = snapshot.device, snapshot.report
    step_s = report.step_time_s if report else None
    tps = report.num_batched_tokens / step_s if report and step_s else None
    usage = snapshot.kv_usage_metric()
    pykv_count, vllm_count = PYKV_NUM_PREEMPTIONS.sample, VLLM_NUM_PREEMPTIONS.sample
    recomputed, tax = RECOMPUTED_TOKENS.sample, RECOMPUTE_TAX.sample
    return [
        ("KV usage", f"{snapshot.metric(usage) * 100:.0f}%", f"{usage.sample} — device pool blocks in use."),
        (
            "Preemptions",
            f"{snapshot.metric(PYKV_NUM_PREEMPTIONS):.0f}",
            f"{pykv_count} — all modes, counted when they happen. {vllm_count} reads "
            f"{snapshot.metric(VLLM_NUM_PREEMPTIONS):.0f}"
            + (
                " (V1 counts a preemption on the request's next output)"
                if snapshot.profile is None or snapshot.profile.preemptions_counted_at_output
                else ""
            )
            + ".",
        ),
        (
            "Recomputed tokens",
            f"{snapshot.metric(RECOMPUTED_TOKENS):.0f} · tax {snapshot.metric(RECOMPUTE_TAX):.0%}",
            f"{recomputed} — tokens re-prefilled after recompute preemptions; {tax} — their "
            "share of all prefill tokens so far (the recompute tax).",
        ),
        (
            "Swapped out",
            fmt_bytes(snapshot.metric(SWAPPED_OUT_BYTES)),
            f"{SWAPPED_OUT_BYTES.sample} — KV bytes copied device → CPU.",
        ),
        (
            f"Tokens/s ({device})",
            "—" if tps is None else f"{tps:,.0f}",
            f"Tokens this step / measured step time on {device}.",
        ),
        (
            f"Step time ({device})",
            fmt_ms(step_s),
            f"Measured wall time of the last step on {device}: schedule + copies + forward + sample.",
        ),
    ]
