"""The modelled narration and tables beside the measured ones: what a swap's modelled copy moves, in words."""

from __future__ import annotations

import dataclasses

from hand_made import snapshot

from pykv.border.step_report import PreemptionView, ScheduledChunk, StepReport
from pykv.border.units import fmt_bytes
from pykv.gpu_model import estimate
from pykv.gpu_model.schedule import bills, per_token_prefill_us
from pykv.viz.modelled import modelled_narration


def test_a_swap_is_narrated_in_the_whole_blocks_it_is_priced_in():
    """A 33-token victim in blocks of 16: the copy moves three whole blocks, 48 tokens' worth of the target's KV."""
    swap = PreemptionView(
        step=1, request_id="v", mode="swap", num_blocks=3, num_tokens=33, num_bytes=3 * 8192, device="cpu"
    )
    report = StepReport(
        step=1,
        scheduled=["x"],
        chunks=[ScheduledChunk("x", 9, 1, False)],
        preempted=[swap],
        swapped_in=[],
        finished=[],
        num_batched_tokens=1,
        forward_time_s=0.01,
        step_time_s=0.01,
        device="cpu",
    )
    snap = dataclasses.replace(snapshot([], [], step=1), report=report)
    est = estimate()
    (line,) = modelled_narration(snap, est.label, bills(est, [report], 16), per_token_prefill_us(est), est.link.name)
    whole = fmt_bytes(48 * est.kv_bytes_per_token_per_gpu)
    assert f"copying req v's 3 whole blocks (33 tokens; {whole} of KV) out over {est.link.name}" in line, line
