"""A Lab's whole run as another engine needs it (lab_run): every request as token ids under the id pykv's engine
gave it, in the order the engine added them (by hand at step k before the workload's arrivals at k), and the
max_model_len pykv runs with."""

from __future__ import annotations

import pytest
from real_vllm_fixtures import gap_manual_lab

from pykv.border.workload import Workload, WorkloadRequest
from pykv.engine.model.loader import load_model
from pykv.lab.lab import Lab, lab_config
from pykv.lab.lab_requests import lab_run


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny", "cpu", "float32")


def test_every_request_is_listed_once_with_the_engines_id_and_its_tokens(tiny):
    lab = gap_manual_lab(tiny)
    run = lab_run(lab)
    assert [r.request_id for r in run.requests] == ["0", "m1", "m2", "3", "4", "m3"]
    assert [r.arrival_step for r in run.requests] == [0, 2, 2, 12, 12, 13]
    seen = {r.request_id: r for r in lab.view.requests}
    assert set(seen) == {r.request_id for r in run.requests}
    for r in run.requests:
        assert r.prompt is None and len(r.prompt_token_ids or ()) == seen[r.request_id].num_prompt_tokens
        assert seen[r.request_id].arrival_step == r.arrival_step
    assert run.requests[1].prompt_token_ids == tiny.encode("class A:")
    assert (run.requests[2].priority, run.requests[3].ignore_eos, run.requests[4].ignore_eos) == (2, True, False)
    assert run.max_model_len == lab.engine.max_model_len and run.config == lab.config


def test_a_request_added_by_hand_at_a_step_goes_before_the_workloads_arrivals_at_it(tiny):
    workload = Workload(name="w", requests=[WorkloadRequest(prompt="def f(x):", max_tokens=2)])
    lab = Lab(lab_config(max_num_seqs=1), tiny, workload=workload)
    lab.add_request("import os", 2)
    lab.step()
    assert [c.request_id for c in lab.view.report.chunks] == ["m1"]  # the engine admitted the hand-added one first
    assert [r.request_id for r in lab_run(lab).requests] == ["m1", "1"]  # "1": one request was added before it


def test_an_automatic_id_skips_the_ids_taken_as_the_engine_does(tiny):
    workload = Workload(
        name="w",
        requests=[
            WorkloadRequest(prompt="a", max_tokens=1, request_id="1"),
            WorkloadRequest(prompt="b", max_tokens=1),
            WorkloadRequest(prompt_token_ids=[7, 8], max_tokens=1, arrival_step=1),
        ],
    )
    lab = Lab(lab_config(), tiny, workload=workload)
    lab.run_to_end()
    engine_ids = {r.request_id for r in lab.view.requests}
    run = lab_run(lab)
    assert [r.request_id for r in run.requests] == ["1", "2", "3"] and engine_ids == {"1", "2", "3"}
    assert run.requests[2].prompt_token_ids == [7, 8]
