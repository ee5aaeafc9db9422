"""The Lab controller behind the Playground (no Streamlit): history, replay, manual requests."""

from __future__ import annotations

import pytest

from pykv import EngineConfig
from pykv.lab.lab import Lab


@pytest.fixture
def make_lab(random_llama, random_llama_path):
    def make(preset="burst", **overrides) -> Lab:
        return Lab(EngineConfig(model=str(random_llama_path), **overrides), random_llama, preset)

    return make


def state(lab: Lab):
    """What must replay exactly: queues, block tables and tokens (not the measured times)."""
    s = lab.view
    return s.step, s.queues, [(r.request_id, r.status, r.block_table, r.num_output_tokens) for r in s.requests]


def test_back_and_step_walk_the_history_without_running_the_engine(make_lab):
    lab = make_lab()
    for _ in range(4):
        assert lab.step()
    at_four = state(lab)
    assert lab.back() and lab.back() and lab.cursor == 2 and lab.head == 4
    assert lab.step() and lab.step() and state(lab) == at_four and lab.engine.step_count == 4
    lab.cursor = 0
    assert not lab.back()


def test_replaying_to_a_step_reproduces_it(make_lab):
    lab = make_lab("storm", num_gpu_blocks=32)
    assert lab.run_to_next_preemption()
    again = make_lab("storm", num_gpu_blocks=32)
    assert again.goto(lab.cursor) == lab.cursor and state(again) == state(lab)
    assert again.view.report.preempted[0].request_id == lab.view.report.preempted[0].request_id


def test_manual_requests_are_logged_and_replayed(make_lab):
    lab = make_lab()
    lab.step(), lab.step()
    rid = lab.add_request("def add(a, b):", 4)
    assert rid == "m1" and "m1" in lab.view.queues["waiting"]
    lab.step()
    replay = Lab(lab.config, lab.loaded, lab.preset, manual=tuple(lab.manual))
    replay.goto(3)
    assert state(replay) == state(lab)


def test_adding_in_the_past_rewrites_the_future_and_bad_input_changes_nothing(make_lab):
    lab = make_lab()
    for _ in range(5):
        lab.step()
    lab.back(), lab.back()
    with pytest.raises(ValueError, match="empty"):
        lab.add_request("", 4)
    assert lab.head == 5 and lab.cursor == 3  # nothing was thrown away
    lab.add_request("x = 1", 2)
    assert lab.head == 3 and lab.cursor == 3 and "m1" in lab.view.queues["waiting"]


def test_run_to_end_and_reset(make_lab):
    lab = make_lab()
    lab.run_to_end()
    assert lab.at_end() and not lab.step()
    assert all(r.status.startswith("finished") for r in lab.view.requests)
    assert lab.goto(10_000) == lab.head  # a deep link past the end stops at the end
    lab.reset()
    assert lab.cursor == lab.head == 0 and not lab.manual
