"""The server timeline figure: a series the release does not report is left out, never drawn as zeros."""

from pykv.bridge.records import Sample, StartupFact
from pykv.viz.server_timeline import server_timeline_figure


def test_only_the_reported_series_are_drawn_on_a_time_axis():
    samples = [Sample(seconds=10.0 * i, running=i, waiting=0, gpu_kv_usage=0.5 + i / 20, gen_tps=100.0,
                      preemptions=i % 2) for i in range(6)]
    fig = server_timeline_figure(samples, [StartupFact(num_gpu_blocks=2048, max_concurrency=3.5)])
    names = {t.name for t in fig.data}
    assert {"running", "waiting", "GPU KV usage", "generation throughput", "preemptions in the interval"} <= names
    assert not names & {"swapped", "CPU KV usage", "prefix-cache hit rate", "prompt throughput"}  # never reported
    assert list(fig.data[0].x) == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    assert "2,048 GPU blocks" in fig.layout.annotations[0].text and fig.layout.template.layout.paper_bgcolor


def test_untimed_samples_are_numbered():
    fig = server_timeline_figure([Sample(running=3), Sample(running=4)])
    assert list(fig.data[0].x) == [1, 2] and "sample" in fig.layout.xaxis4.title.text
