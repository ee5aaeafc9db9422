"""The one table of metric names: the engine registers exactly its rows, and a name it lacks raises (a typo
never reads 0.0); a metric a profile does not export is asked for with the optional lookups."""

from __future__ import annotations

import pytest

from pykv.border import metric_names as names
from pykv.border.metric_names import MetricNotExportedError, UnknownMetricError, exported_samples, read_metric
from pykv.border.snapshot import Snapshot
from pykv.border.vllm_profiles import PROFILES
from pykv.engine.observe.metrics import EngineMetrics


def snapshot(profile: str, **samples: float) -> Snapshot:
    metrics = dict.fromkeys(exported_samples(PROFILES[profile]), 0.0) | {k.replace("__", ":"): v
                                                                         for k, v in samples.items()}
    return Snapshot(1, "cpu", 16, 8192, {"waiting": [], "running": [], "swapped": []}, [], [], [], metrics,
                    vllm_profile=profile)


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_engine_exports_exactly_the_tables_rows_for_its_profile(profile):
    assert sorted(EngineMetrics(PROFILES[profile]).as_dict()) == sorted(exported_samples(PROFILES[profile]))


def test_an_unknown_metric_name_raises_instead_of_reading_zero():
    snap = snapshot("v0.33")
    with pytest.raises(UnknownMetricError, match="did you mean 'vllm:num_preemptions_total'"):
        snap.metric("vllm:num_preemption_total")
    with pytest.raises(UnknownMetricError):
        snap.optional_metric("pykv:no_such_metric")
    with pytest.raises(UnknownMetricError):
        EngineMetrics(PROFILES["v0.6"]).value("vllm:num_preemption_total")
    with pytest.raises(UnknownMetricError):  # a Metric made by hand is no row of the table
        read_metric({}, names.Metric("pykv:made_up", names.MetricKind.GAUGE, "?"), PROFILES["v0.33"])


def test_a_metric_the_profile_does_not_export_is_none_by_design_and_an_error_when_required():
    v1, v0 = snapshot("v0.33"), snapshot("v0.6", vllm__num_requests_swapped=2.0)
    assert v1.optional_metric(names.NUM_REQUESTS_SWAPPED) is None
    assert v0.optional_metric(names.NUM_REQUESTS_SWAPPED) == 2.0 == v0.metric("vllm:num_requests_swapped")
    with pytest.raises(MetricNotExportedError, match="not exported under vLLM profile v0.33"):
        v1.metric(names.NUM_REQUESTS_SWAPPED)
    assert EngineMetrics(PROFILES["v0.10"]).optional_value(names.OFFLOAD_STORE_BYTES) is None


def test_kv_usage_is_named_per_release():
    assert snapshot("v0.6").kv_usage_metric() is names.GPU_CACHE_USAGE
    assert snapshot("v0.10").kv_usage_metric() is names.KV_CACHE_USAGE
    assert names.kv_usage(PROFILES["v0.33"]).sample == "vllm:kv_cache_usage_perc"


def test_counters_read_by_their_total_and_histograms_by_their_sum():
    assert names.RECOMPUTED_TOKENS.sample == "pykv:recomputed_tokens_total"
    assert names.RECOMPUTE_TAX.sample == "pykv:recompute_tax"
    assert names.REQUEST_PREEMPTIONS.samples == ("pykv:request_preemptions_sum", "pykv:request_preemptions_count")
    assert names.metric_named("pykv:request_preemptions_count") is names.REQUEST_PREEMPTIONS
