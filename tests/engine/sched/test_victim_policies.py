"""Victim policies (``preemption_victim``): who is chosen and why, the queues after the step, and one seeded
storm under each policy giving different victims and recompute work with identical greedy tokens.

Sources: vLLM 0.33.0 ``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule`` (``self.running[-1]``, or
``max(self.running, key=lambda r: (r.priority, r.arrival_time))`` under priority scheduling, undoing a
victim already scheduled this step); vLLM 0.6.3.post1 ``vllm/core/scheduler.py`` ``_schedule_running``
(``running_queue.pop()``); sglang 0.5.23 ``python/sglang/srt/managers/schedule_batch.py``
``ScheduleBatch._get_decode_retraction_order`` (sort by (output length, -input length), retract from the end).
"""

from __future__ import annotations

import pytest
from rules import assert_drained, step_checked

from pykv import EngineConfig, SamplingParams
from pykv.border.request import Request
from pykv.border.workload import make_workload
from pykv.engine.sched.victim_policy import choose_victim


def req(rid: str, prompt: int, outputs: int = 0, computed: int = 0, priority: int = 0, arrival: float = 0.0):
    r = Request(rid, list(range(1, prompt + 1)), SamplingParams(), priority=priority, arrival_time=arrival)
    r.output_token_ids = [7] * outputs
    r.num_computed_tokens = computed
    return r


def test_each_policy_picks_its_victim_and_says_why():
    a = req("a", prompt=40, outputs=10, computed=49, priority=0, arrival=1.0)
    b = req("b", prompt=8, outputs=2, computed=9, priority=2, arrival=2.0)
    c = req("c", prompt=64, outputs=2, computed=65, priority=1, arrival=3.0)
    d = req("d", prompt=20, outputs=30, computed=49, priority=2, arrival=4.0)
    running = [a, b, c, d]
    assert choose_victim("last", running).request is d
    assert choose_victim("priority", running).request is d  # priority 2, the later arrival of the two
    assert choose_victim("priority", [a, b, c]).request is b
    assert choose_victim("lcf", running).request is b  # 9 computed tokens: the least work lost
    assert choose_victim("sglang", running).request is c  # 2 outputs like b, but the longer input (64 > 8)
    assert "fewest computed tokens (9)" in choose_victim("lcf", running).why
    assert "priority 2" in choose_victim("priority", running).why
    assert "longest input (64 tokens)" in choose_victim("sglang", running).why
    assert "last of the running queue" in choose_victim("last", running).why
    with pytest.raises(ValueError, match="Unknown preemption_victim 'fifo'"):
        choose_victim("fifo", running)


def test_lcf_ties_are_said_as_they_are_broken():
    """lcf is no vLLM policy: the proposal (vLLM PR #53723) takes min(running, key=num_computed_tokens), the earliest
    of equals; the table's text says which way pykv breaks a tie, and this test keeps the two together."""
    from pykv.border.preemption_choices import VICTIM_POLICIES

    early, late = req("early", prompt=8, computed=8), req("late", prompt=8, computed=8)
    victim = choose_victim("lcf", [early, late]).request
    text = VICTIM_POLICIES["lcf"].about
    assert "Ties: pykv takes the " + ("later" if victim is late else "earliest") in text
    assert "takes the earliest" in text  # the proposal's rule, said beside pykv's


def storm_run(make_engine, policy: str, vllm_profile: str = "v0.33"):
    """Six requests of different lengths and priorities arriving together in a pool that cannot hold them all."""
    engine = make_engine(
        vllm_profile=vllm_profile, block_size=4, num_gpu_blocks=24, max_num_batched_tokens=64, preemption_victim=policy
    )
    lengths = [6, 30, 10, 22, 14, 3]
    for i, n in enumerate(lengths):
        engine.add_request(
            list(range(5 + i, 5 + i + n)),
            SamplingParams(max_tokens=24, ignore_eos=True),
            request_id=f"r{i}",
            priority=i % 3,
        )
    victims, whys = [], []
    while engine.has_unfinished_requests():
        report = step_checked(engine)
        victims += [p.request_id for p in report.preempted]
        whys += [p.why for p in report.preempted]
    assert_drained(engine)
    tokens = {rid: engine.outputs[rid].output_token_ids for rid in engine.outputs}
    lost = sum(p.num_tokens for p in engine.preemptions())
    return victims, whys, lost, tokens, engine


@pytest.mark.parametrize("vllm_profile", ["v0.6", "v0.33"])
def test_one_storm_under_each_policy(make_engine, vllm_profile):
    runs = {policy: storm_run(make_engine, policy, vllm_profile) for policy in ("last", "priority", "lcf", "sglang")}
    tokens = {policy: run[3] for policy, run in runs.items()}
    assert all(t == tokens["last"] for t in tokens.values()), "greedy tokens depend on the victim policy"
    victims = {policy: tuple(run[0]) for policy, run in runs.items()}
    assert all(victims.values()), "the storm must preempt under every policy"
    assert len(set(victims.values())) >= 3, victims  # different victims ...
    lost = {policy: run[2] for policy, run in runs.items()}
    assert len(set(lost.values())) >= 3, lost  # ... and different work thrown away
    # lcf loses the least work per preemption, not per run: here it can preempt more often (the lesson shows a
    # workload where it wins).
    for policy, (_, whys, *_rest) in runs.items():
        assert all(why for why in whys), f"{policy}: a preemption without its reason"
    last_engine = runs["last"][4]
    metrics = last_engine.metrics.as_dict()
    assert metrics["pykv:recomputed_tokens_total"] > 0
    assert 0 < metrics["pykv:recompute_tax"] < 1


def test_priority_orders_the_waiting_queue_and_undoes_a_scheduled_victim(make_engine):
    """vLLM's priority policy pops waiting requests by (priority, arrival), and its victim may be a request already
    scheduled this step: its chunk is taken back and its tokens return to the budget."""
    engine = make_engine(block_size=4, num_gpu_blocks=8, max_num_batched_tokens=64, preemption_victim="priority")
    engine.add_request(list(range(1, 9)), SamplingParams(max_tokens=20, ignore_eos=True), "low", priority=5)
    engine.add_request(list(range(2, 10)), SamplingParams(max_tokens=20, ignore_eos=True), "high", priority=0)
    assert [r.request_id for r in engine.scheduler.waiting] == ["high", "low"]
    seen_undo = False
    while engine.has_unfinished_requests():
        report = step_checked(engine)
        for p in report.preempted:
            assert p.request_id == "low", "the high-priority request was preempted"
            assert p.request_id not in report.scheduled
            seen_undo = True
    assert seen_undo
    assert engine.outputs["high"].num_preemptions == 0


def test_a_victim_scheduled_earlier_in_the_step_is_taken_back_and_leaves_no_hash(make_engine, monkeypatch):
    """Under lcf a V1 victim may be a request scheduled earlier in the same step (0.33's priority branch does the
    same): its chunk is taken back, its tokens go back to the budget, and blocks registered for that chunk, which
    never ran, lose their hashes (the prefix cache must not offer KV that was never computed)."""
    import pykv.engine.sched.scheduler as scheduler

    taken_back = []

    class Chunks(list):
        def pop(self, index=-1):
            chunk = super().pop(index)
            taken_back.append(chunk)
            return chunk

    init = scheduler.SchedulerOutput.__init__

    def counting_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.chunks = Chunks(self.chunks)

    monkeypatch.setattr(scheduler.SchedulerOutput, "__init__", counting_init)
    engine = make_engine(
        block_size=4, num_gpu_blocks=8, max_num_batched_tokens=64, preemption_victim="lcf", enable_prefix_caching=True
    )
    for i, n in enumerate([6, 3, 13]):
        engine.add_request(list(range(1 + i, 1 + i + n)), SamplingParams(max_tokens=12, ignore_eos=True), f"q{i}")
    while engine.has_unfinished_requests():
        before = len(taken_back)
        report = step_checked(engine)
        for chunk in taken_back[before:]:
            assert chunk.request_id in [p.request_id for p in report.preempted]
            assert chunk.request_id not in report.scheduled
            assert report.num_batched_tokens <= engine.config.max_num_batched_tokens
    assert taken_back, "the scenario must take a scheduled chunk back"
    assert_drained(engine)


def test_bad_policy_and_priority_are_one_line_errors(make_engine):
    with pytest.raises(ValueError, match="preemption_victim must be one of"):
        EngineConfig(preemption_victim="oldest")
    engine = make_engine()
    for bad in ("high", 1.5, True, None, 2**40):
        with pytest.raises(ValueError, match="priority must be an integer") as e:
            engine.add_request("hello", priority=bad)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="one integer per prompt"):
        engine.generate(["a", "b"], priority=[1])
    assert engine.generate("a b", SamplingParams(max_tokens=2), priority=[3])[0].output_token_ids


def test_workload_files_carry_priorities():
    w = make_workload("burst", n=2)
    raw = w.model_dump() | {"requests": [r.model_dump() | {"priority": 2} for r in w.requests]}
    assert all(r.priority == 2 for r in type(w).model_validate(raw).requests)
    with pytest.raises(ValueError, match="priority"):
        type(w).model_validate(w.model_dump() | {"requests": [w.requests[0].model_dump() | {"priority": "2"}]})


def test_sglang_policy_writes_sglangs_retract_line(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=24, max_num_batched_tokens=64, preemption_victim="sglang")
    for i, n in enumerate([6, 30, 10, 22, 14, 3]):
        engine.add_request(list(range(5 + i, 5 + i + n)), SamplingParams(max_tokens=24, ignore_eos=True), f"r{i}")
    lines = []
    while engine.has_unfinished_requests():
        lines += engine.step().log_lines
    retract = [line for line in lines if "Retract requests" in line]
    assert retract and retract[0].startswith(
        "[SGLang's log line] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: "
    )
