"""Where pykv and vLLM's real engine part: two recorded runs of the real engine (tests/fixtures/real_vllm) agree
with pykv's Labs step by step and token by token; a change to any compared field of one step is reported at that
step, with what differs; a run that ends early on either side is a difference; a request added by hand at the
step on screen is not in the real engine's queue yet."""

from __future__ import annotations

import dataclasses

import pytest
from real_vllm_fixtures import burst_lab, gap_manual_lab, load

from pykv.real_vllm.divergence import FIELDS, first_divergence, pykv_record, real_record, token_check
from pykv.real_vllm.trace import RealTrace, read_trace


@pytest.fixture(scope="module")
def gap():
    """The gap_manual Lab run to its end (17 steps, 9 to 12 idle) and the real engine's trace of it."""
    return gap_manual_lab(), read_trace(load("gap_manual")["trace"])


@pytest.fixture(scope="module")
def burst():
    """The burst Lab at step 12 (three preemptions lie later) and the real engine's whole run of it."""
    lab = burst_lab()
    lab.goto(12)
    return lab, read_trace(load("burst")["trace"])


def with_step(trace: RealTrace, k: int, **changes) -> RealTrace:
    steps = list(trace.steps)
    steps[k - 1] = dataclasses.replace(steps[k - 1], **changes)
    return dataclasses.replace(trace, steps=tuple(steps))


def test_a_recorded_real_run_agrees_with_pykv_on_every_step_and_every_token(gap):
    lab, trace = gap
    assert lab.at_end() and len(trace.steps) == lab.head == 17
    assert first_divergence(lab.snapshots, trace, pykv_done=True) is None
    check = token_check(lab.view, trace)
    assert check.agree and sorted(check.compared) == ["0", "3", "4", "m1", "m2", "m3"]
    assert check.line() == "Same tokens: all 6 finished requests produced the same tokens in both engines."


def test_idle_steps_and_requests_added_by_hand_are_compared_as_the_engine_saw_them(gap):
    lab, trace = gap
    assert [s.scheduled for s in trace.steps[8:12]] == [()] * 4  # nothing queued until step 12's arrivals
    assert [pykv_record(s).batch for s in lab.snapshots[9:13]] == [()] * 4  # pykv counts those steps too
    at_13 = lab.snapshots[13]
    assert "m3" in at_13.queues["waiting"]  # added by hand after step 13 ran: in pykv's snapshot 13 ...
    assert "m3" not in pykv_record(at_13).waiting  # ... but not in the queue compared, as not in vLLM's
    assert pykv_record(at_13) == real_record(trace.steps[12])
    assert pykv_record(lab.snapshots[14]).batch[-1] == ("m3", 0, 1) == trace.steps[13].scheduled[-1]


def test_a_partial_run_agrees_so_far_and_tokens_wait_for_finished_requests(burst):
    lab, trace = burst
    assert first_divergence(lab.snapshots, trace, pykv_done=False) is None  # vLLM ran on: pykv is not there yet
    assert token_check(lab.snapshots[1], trace).line().startswith("No request has finished yet")


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("scheduled", (("0", 0, 99),), "vLLM 0 0+99"),
        ("preempted", ("3",), "vLLM 3"),
        ("waiting", ("7", "6"), "vLLM 7, 6"),
        ("running", (), "vLLM none"),
        ("free_blocks", 99, "vLLM 99"),
        ("finished", ("1",), "vLLM 1"),
    ],
)
def test_a_change_to_any_compared_field_is_the_first_divergence_at_its_step(burst, field, value, shown):
    lab, trace = burst
    changed = with_step(trace, 7, **{field: value})
    found = first_divergence(lab.snapshots, changed, pykv_done=False)
    assert found is not None and found.step == 7
    what = "batch" if field == "scheduled" else field
    assert found.what == what and found.line().startswith(f"Step 7, {FIELDS[what]}: pykv ")
    assert found.line().endswith(f"{shown}.")
    assert first_divergence(lab.snapshots[:7], changed, pykv_done=False) is None  # not yet at step 6


def test_the_earliest_step_wins_and_within_a_step_the_batch_comes_first(burst):
    lab, trace = burst
    changed = with_step(with_step(trace, 9, free_blocks=0), 4, running=(), scheduled=())
    found = first_divergence(lab.snapshots, changed, pykv_done=False)
    assert found is not None and (found.step, found.what) == (4, "batch")


def test_a_run_that_ends_early_on_either_side_differs(gap):
    lab, trace = gap
    short = dataclasses.replace(trace, steps=trace.steps[:15])
    found = first_divergence(lab.snapshots, short, pykv_done=True)
    assert found is not None and (found.step, found.what) == (16, "length")
    assert found.line() == "Step 16: pykv runs a step 16; vLLM had finished after step 15."
    found = first_divergence(lab.snapshots[:16], trace, pykv_done=True)
    assert found is not None and (found.step, found.what) == (16, "length")
    assert "pykv had finished after step 15" in found.line() and "vLLM runs 2 more" in found.line()
    assert first_divergence(lab.snapshots[:16], trace, pykv_done=False) is None  # pykv may still get there


def test_tokens_that_differ_or_are_missing_are_named(gap):
    lab, trace = gap
    outputs = dict(trace.outputs)
    outputs["m1"] = (1, 2, 3)
    del outputs["3"]
    check = token_check(lab.view, dataclasses.replace(trace, outputs=outputs))
    assert not check.agree and check.differ == ("m1",) and check.missing == ("3",)
    assert check.line() == "Tokens of 6 finished requests: different tokens for m1; no tokens from vLLM for 3."
