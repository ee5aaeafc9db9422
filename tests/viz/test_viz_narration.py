"""Narration, metrics strip and tables from fixed snapshots."""

from __future__ import annotations

import dataclasses

from pykv.border.metric_names import exported_samples
from pykv.border.request import RequestOutput
from pykv.border.snapshot import Snapshot
from pykv.border.step_report import AdmissionWait, PreemptionView, ScheduledChunk, StepReport
from pykv.border.units import fmt_bytes
from pykv.border.vllm_profiles import PROFILES
from pykv.viz import metrics_strip, narrate, preemption_costs_frame, preemptions_frame, requests_frame

ZEROS = dict.fromkeys(exported_samples(PROFILES["v0.33"]), 0.0)  # every sample a v0.33 engine exports, at 0


def snap_with(report, metrics=None, preemptions=()) -> Snapshot:
    return Snapshot(
        7,
        "cpu",
        16,
        16384,
        {"waiting": [], "running": [], "swapped": []},
        [],
        [],
        list(preemptions),
        ZEROS | (metrics or {}),
        None if report is None else StepReport(**report),
    )


def report(**kw):
    base = dict(
        step=7,
        scheduled=[],
        chunks=[],
        preempted=[],
        swapped_in=[],
        finished=[],
        num_batched_tokens=0,
        forward_time_s=0.001,
        step_time_s=0.002,
        device="cpu",
        log_lines=[],
    )
    return base | kw


def cost(rid, mode, **kw) -> PreemptionView:
    return PreemptionView(
        **dict(step=7, request_id=rid, mode=mode, num_blocks=5, num_tokens=80, num_bytes=5 * 16384, device="cpu") | kw
    )


def test_step_zero_says_nothing_ran():
    assert "nothing has run yet" in narrate(snap_with(None))[0]


def test_recompute_and_swap_preemptions_are_narrated_with_measured_costs():
    lines = narrate(
        snap_with(
            report(
                preempted=[
                    cost("3", "recompute"),
                    cost("2", "swap", num_blocks=4, num_bytes=65536, swap_out_s=0.00012, modelled_pcie_out_s=0.00005),
                ]
            )
        )
    )
    assert "req 3 preempted by recompute: 5 blocks freed, 80 tokens to recompute." in lines
    swap = next(line for line in lines if line.startswith("req 2"))
    assert "swapped out: 4 blocks, 64 KiB copied, 0.12 ms measured on cpu" in swap
    assert "(this model's 64 KiB modelled over PCIe: 0.05 ms)" in swap  # the tiny model's bytes, not the target's


def test_fallback_abort_swap_in_prefix_hit_and_finish():
    lines = narrate(
        snap_with(
            report(
                chunks=[
                    ScheduledChunk(request_id="5", start=48, num_new_tokens=10, is_prefill=True, num_cached_tokens=48),
                    ScheduledChunk(request_id="1", start=30, num_new_tokens=1, is_prefill=False, num_cached_tokens=0),
                ],
                num_batched_tokens=11,
                preempted=[
                    cost("4", "recompute", fallback="recompute", reason="CPU pool full"),
                    cost("6", "abort", reason="too big"),
                ],
                swapped_in=[cost("2", "swap", swap_in_s=0.0002)],
                finished=[
                    RequestOutput(
                        request_id="1",
                        prompt_token_ids=[7],
                        output_token_ids=[1, 2, 3],
                        text="abc",
                        finish_reason="length",
                        num_preemptions=2,
                    )
                ],
            )
        )
    )
    text = "\n".join(lines)
    assert "2 requests: 1 prefill chunk and 1 decode, 11 tokens" in lines[0] and "measured on cpu" in lines[0]
    assert "reusing 48 cached prompt tokens (3 blocks) from the prefix cache" in text
    assert "swap fell back to recompute: CPU pool full" in text and "req 6 aborted: too big." in text
    assert "req 2 swapped back in: 5 blocks, 80 KiB, 0.20 ms measured on cpu" in text
    assert "req 1 finished (length): 3 tokens, preempted 2× on the way." in text


def test_metrics_strip_names_the_device():
    strip = dict(
        (label, value)
        for label, value, _ in metrics_strip(
            snap_with(
                report(num_batched_tokens=100, step_time_s=0.01),
                {
                    "vllm:kv_cache_usage_perc": 0.5,
                    "pykv:num_preemptions_total": 3.0,
                    "vllm:num_preemptions_total": 2.0,
                    "pykv:recomputed_tokens_total": 80.0,
                    "pykv:swapped_out_bytes_total": 2048.0,
                    "pykv:recompute_tax": 0.25,
                },
            )
        )
    )
    assert strip == {
        "KV usage": "50%",
        "Preemptions": "3",
        "Recomputed tokens": "80 · tax 25%",
        "Swapped out": "2 KiB",
        "Tokens/s (cpu)": "10,000",
        "Step time (cpu)": "10.00 ms",
    }
    helps = {label: text for label, _, text in metrics_strip(snap_with(report(), {"vllm:num_preemptions_total": 2.0}))}
    assert (
        "vllm:num_preemptions_total reads 2 (V1 counts a preemption on the request's next output)"
        in helps["Preemptions"]
    )


def test_metrics_strip_reads_v0_names_under_v0():
    snap = dataclasses.replace(snap_with(report(), {"vllm:gpu_cache_usage_perc": 0.25}), vllm_profile="v0.6")
    (usage,) = [(value, text) for label, value, text in metrics_strip(snap) if label == "KV usage"]
    assert usage[0] == "25%" and usage[1].startswith("vllm:gpu_cache_usage_perc")


def test_bytes_format():
    assert fmt_bytes(512) == "512 B" and fmt_bytes(65536) == "64 KiB" and fmt_bytes(1.5 * 2**20) == "1.5 MiB"


def test_tables():
    s = snap_with(None, preemptions=[cost("3", "recompute")])
    assert list(preemptions_frame(s)["mode"]) == ["recompute"]
    assert requests_frame(s).empty and "TTFT ms" in requests_frame(s).columns


def test_the_narration_says_why_the_head_of_the_waiting_queue_waits_with_the_releases_rule():
    """Issue 48 item 8: at 24 blocks on v0.33 the storm stalls for ~95 steps, and each read only "ran 2 requests"."""
    stalled = report(
        chunks=[ScheduledChunk("0", 60, 1, False), ScheduledChunk("1", 70, 1, False)],
        head_wait=AdmissionWait("2", "whole_input", blocks_needed=5, blocks_free=3, tokens=70),
    )
    snap = dataclasses.replace(snap_with(stalled), queues={"waiting": ["2", "3", "4"], "running": ["0", "1"]})
    line = narrate(snap)[-1]
    assert line.startswith("req 2 waits: vLLM 0.33.0 admits a request only once its whole input (70 tokens) fits")
    assert "it needs 5 free blocks; 3 are free; 2 more requests wait behind it" in line
    assert Snapshot.from_json(snap.to_json()) == snap  # the reason travels with the snapshot
    kept = AdmissionWait("2", "chunk_blocks", blocks_needed=4, blocks_free=3, watermark_blocks=1, tokens=16)
    line = narrate(dataclasses.replace(snap, report=StepReport(**report(head_wait=kept))))[-1]
    assert "its next chunk (16 tokens) does not fit: it needs 4 free blocks, 1 of them kept free by the" in line
    for wait, words in (
        (AdmissionWait("2", "max_num_seqs", limit=8), "req 2 waits: max_num_seqs=8 sequences are running already"),
        (AdmissionWait("2", "preempted_this_step"), "admits nobody in a step that preempted"),
        (AdmissionWait("2", "token_budget", tokens=40, limit=12), "it needs 40 tokens of this step's budget, 12 are"),
    ):
        assert words in narrate(dataclasses.replace(snap, report=StepReport(**report(head_wait=wait))))[-1]


def test_preemption_costs_are_written_with_their_units():
    """Issue 48 item 11: the Preemption costs tab showed a swap's seconds to six decimals ("0.000005")."""
    swap = cost("3", "swap", swap_out_s=0.000005, swap_in_s=0.0123, modelled_pcie_out_s=0.00004, steps_lost=9)
    swap = dataclasses.replace(swap, swap_out_cpu_s=0.000004, swap_in_cpu_s=0.002)
    rec = cost("4", "recompute", recomputed_tokens=80, recompute_s=1.5, recompute_cpu_s=0.75, steps_lost=None)
    table = preemption_costs_frame(snap_with(None, preemptions=[swap, rec]))
    first, second = table.to_dict("records")
    assert (first["swap out"], first["swap in"], first["PCIe out (modelled)"]) == ("5.0 µs", "12.30 ms", "40.0 µs")
    assert (first["recompute time"], second["recompute time"], second["swap out"]) == ("—", "1.50 s", "—")
    # Each wall time beside the engine thread's CPU time (issue 47): a busy machine inflates only the first
    assert (first["swap out, CPU"], first["swap in, CPU"], first["recompute, CPU"]) == ("4.0 µs", "2.00 ms", "—")
    assert (second["recompute, CPU"], second["swap in, CPU"]) == ("750.00 ms", "—")
    assert first["KV bytes"] == "80 KiB" and first["steps lost"] == 9 and str(table["steps lost"].dtype) == "Int64"
    assert (first["step"], first["request_id"]) == (7, "3")  # the names the modelled bills are matched by


def test_victim_reasons_loads_stores_forks_copies_and_the_tax_are_narrated():
    from pykv.border.step_report import CopyOnWrite, OffloadTransfer

    lines = "\n".join(
        narrate(
            snap_with(
                report(
                    chunks=[ScheduledChunk("4", 32, 16, True, 0, 32), ScheduledChunk("5", 0, 16, True)],
                    preempted=[cost("6", "recompute", why="it has the fewest computed tokens (12) of 3 running")],
                    offload=[
                        OffloadTransfer("load", 2, 32768, 0.0004, 0.0007, "cpu"),
                        OffloadTransfer("store", 1, 16384, 0.0002, 0.0004, "cpu"),
                    ],
                    copy_on_write=[CopyOnWrite("7#1", 3, 9)],
                    forked={"8": ["8#1", "8#2"]},
                    recomputed_tokens=8,
                )
            )
        )
    )
    assert "req 6 was chosen because it has the fewest computed tokens (12) of 3 running." in lines
    assert "req 4 loaded 32 tokens (2 blocks) from the CPU offloading tier instead of recomputing them." in lines
    assert (
        "2 block(s) loaded (CPU tier → device): 32 KiB, 0.40 ms measured on cpu, 0.08 GB/s (these bytes modelled "
        "over PCIe: 0.70 ms)"
    ) in lines
    assert "1 block(s) stored (device → CPU tier)" in lines
    assert "req 7#1 copied shared block 3 to block 9 before appending to it (copy on write)" in lines
    assert (
        "req 8 forked 2 sequence(s) (8#1, 8#2) on its first token: they share all its blocks (reference count 3"
        in lines
    )
    assert "Recompute tax this step: 8 of the prefill tokens (25%)" in lines  # 8 of 32 prefill tokens


def test_a_recompute_only_run_shows_no_swap_columns():
    rec = cost("4", "recompute", recomputed_tokens=80, recompute_s=1.5, recompute_cpu_s=0.75, steps_lost=3)
    table = preemption_costs_frame(snap_with(None, preemptions=[rec]))
    assert not {"swap out", "swap out, CPU", "swap in", "PCIe out (modelled)", "fallback"} & set(table.columns)
    assert table.to_dict("records")[0]["recompute, CPU"] == "750.00 ms"
    waiting = cost("5", "recompute", recomputed_tokens=0, steps_lost=None)  # preempted, not yet re-prefilled
    pending = preemption_costs_frame(snap_with(None, preemptions=[rec, waiting])).to_dict("records")[1]
    assert (pending["recompute time"], pending["recompute, CPU"]) == ("—", "—")
