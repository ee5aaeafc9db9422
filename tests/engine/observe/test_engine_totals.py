"""One home per fact: the observer's typed running totals set the Prometheus counters (never read back),
the ledger's preemption records are the frozen views, a run's totals are one dataclass whose fields are
the sweep's columns, and kernel launches come back from the step that recorded them."""

from __future__ import annotations

import dataclasses

import pytest

from pykv import SamplingParams
from pykv.border import metric_names as names
from pykv.border.run_totals import RUN_TOTALS_COLUMNS, RunTotals
from pykv.border.step_report import PreemptionView
from pykv.border.workload import make_workload
from pykv.engine.observe.totals import COUNTER_OF, EngineTotals
from pykv.lab.completed_run import run_to_completion
from pykv.lab.sweep import RUN_COLUMNS

LONG = SamplingParams(max_tokens=16, ignore_eos=True)


def crowded(make_engine, **overrides):
    engine = make_engine(**({"block_size": 4, "num_gpu_blocks": 8, "max_num_seqs": 3} | overrides))
    for i in range(3):
        engine.add_request([10 + i] + list(range(11, 20)), LONG)
    while engine.has_unfinished_requests():
        engine.step()
    return engine


@pytest.mark.parametrize("overrides", [{}, {"vllm_profile": "v0.6", "preemption_mode": "swap", "num_cpu_blocks": 16}])
def test_the_counters_equal_the_observers_totals(make_engine, overrides):
    engine = crowded(make_engine, **overrides)
    totals = engine.totals()
    assert isinstance(totals, EngineTotals) and totals.preemptions == len(engine.preemptions()) > 0
    for field, metric in COUNTER_OF.items():
        expected = getattr(totals, field) if engine.metrics.exports(metric) else None
        assert engine.metrics.optional_value(metric) == pytest.approx(expected), field
    assert engine.metrics.value(names.RECOMPUTE_TAX) == pytest.approx(totals.recompute_tax or 0.0)


def test_preemption_records_are_frozen_views_that_later_steps_replace(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=8, max_num_seqs=3)
    for i in range(3):
        engine.add_request([10 + i] + list(range(11, 20)), LONG)
    first = None
    while engine.has_unfinished_requests():
        report = engine.step()
        if report.preempted and first is None:
            first = report.preempted[0]
    assert isinstance(first, PreemptionView) and first.recovered_step is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.recomputed_tokens = 1  # type: ignore[misc]
    later = next(p for p in engine.preemptions() if (p.step, p.request_id) == (first.step, first.request_id))
    assert later.recovered_step is not None and later.recomputed_tokens > 0  # the ledger's copy filled in
    assert engine.snapshot().preemptions == engine.preemptions()


def test_run_totals_are_one_dataclass_whose_fields_are_the_sweeps_columns(make_engine):
    engine = make_engine()
    run = run_to_completion(
        engine.config.replace(num_gpu_blocks=10, block_size=16),
        make_workload("storm", n=3, max_tokens=8),
        engine.loaded,
    )
    totals = run.totals()
    assert isinstance(totals, RunTotals) and totals.preemptions == len(run.engine.preemptions())
    assert list(totals.as_row()) == list(RUN_TOTALS_COLUMNS)
    start = RUN_COLUMNS.index(RUN_TOTALS_COLUMNS[0])
    assert RUN_COLUMNS[start : start + len(RUN_TOTALS_COLUMNS)] == list(RUN_TOTALS_COLUMNS)
    assert totals.recompute_tax == (run.engine.totals().recompute_tax or 0.0)


def test_a_step_returns_its_kernel_launches_only_when_asked(make_engine):
    engine = make_engine(attention_backend="torch")
    engine.add_request([1, 2, 3], SamplingParams(max_tokens=2))
    recorded = engine.step_recording_kernels()
    assert recorded.report.step == 1 and recorded.launches == ()  # torch attention launches no Triton kernel
    assert not hasattr(engine.runner, "record_kernels")
