"""The server timeline figure: a series the release does not report is left out, never drawn as zeros."""

from pykv.bridge.base.records import Sample, StartupFact
from pykv.viz.server_timeline import server_timeline_figure


def test_only_the_reported_series_are_drawn_on_a_time_axis():
    samples = [
        Sample(seconds=10.0 * i, running=i, waiting=0, gpu_kv_usage=0.5 + i / 20, gen_tps=100.0, preemptions=i % 2)
        for i in range(6)
    ]
    fig = server_timeline_figure(samples, [StartupFact(num_gpu_blocks=2048, max_concurrency=3.5)])
    names = {t.name for t in fig.data}
    assert {"running", "waiting", "GPU KV usage", "generation throughput", "preemptions in the interval"} <= names
    assert not names & {"swapped", "CPU KV usage", "prefix-cache hit rate", "prompt throughput"}  # never reported
    assert list(fig.data[0].x) == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    assert "2,048 GPU blocks" in fig.layout.annotations[0].text and fig.layout.template.layout.paper_bgcolor


def test_untimed_samples_are_numbered():
    fig = server_timeline_figure([Sample(running=3), Sample(running=4)])
    assert list(fig.data[0].x) == [1, 2] and "sample" in fig.layout.xaxis4.title.text


def test_every_panel_makes_room_for_its_tick_labels():
    # the figure's left margin is 8 px: without automargin only the last digit of "2,000" or "100%" showed
    samples = [
        Sample(seconds=5.0 * i, running=60, waiting=2000 + i, gpu_kv_usage=0.99, gen_tps=4300.0, preemptions=50)
        for i in range(4)
    ]
    layout = server_timeline_figure(samples).layout
    axes = [name for name in layout.to_plotly_json() if name.startswith("yaxis")]
    assert len(axes) == 4 and all(layout[name].automargin is True for name in axes)
