"""A SpecFigure serves the JSON a go.Figure of the same traces and layout serves (the suite checks every figure it
draws: conftest, spec_parity.py), here for the figures the Playground draws at every step of real runs (recompute and
swap), and it becomes a full figure wherever more is asked of it."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
from spec_parity import ParityCheckedSpecFigure, as_json

from pykv import EngineConfig
from pykv.border.snapshot import diff_snapshots
from pykv.lab.lab import Lab
from pykv.viz import block_grid_figure, block_tables_figure, queues_figure, theme, timeline_figure
from pykv.viz.spec_figure import SpecFigure


@pytest.mark.parametrize(
    "overrides",
    [dict(num_gpu_blocks=24), dict(num_gpu_blocks=24, vllm_profile="v0.6", preemption_mode="swap", num_cpu_blocks=32)],
)
def test_the_served_json_is_plotlys_at_every_step(random_llama, random_llama_path, overrides):
    assert theme.SpecFigure is ParityCheckedSpecFigure
    lab = Lab(EngineConfig(model=str(random_llama_path), **overrides), random_llama, "storm")
    before = ParityCheckedSpecFigure.checked
    while lab.step() and lab.cursor < 40:
        snap, diff = lab.view, diff_snapshots(lab.previous, lab.view)
        block_grid_figure(snap, "gpu", diff.blocks, height=460)
        block_grid_figure(snap, "cpu", diff.blocks, legend=False, cols=4)
        block_tables_figure(snap, changed_requests=diff.requests, dark=True)
        queues_figure(snap, changed=diff.requests, width=300)
        timeline_figure(lab.snapshots, lab.cursor, height=500)
    assert lab.cursor == 40 and ParityCheckedSpecFigure.checked - before == 5 * 39
    assert any(b.pool == "cpu" for b in lab.view.blocks) == ("preemption_mode" in overrides)


def test_it_becomes_a_full_figure_where_more_is_asked(random_llama, random_llama_path):
    lab = Lab(EngineConfig(model=str(random_llama_path)), random_llama, "storm")
    lab.step()
    fig = queues_figure(lab.view)
    served = fig.to_dict()
    assert isinstance(fig, SpecFigure) and "_spec" in fig.__dict__ and served["layout"]["height"] == 250
    served["extra"] = 1  # the top level is the caller's own
    assert "extra" not in fig.to_dict()
    assert fig.layout.height == 250 and "_spec" not in fig.__dict__  # built on first use
    fig.update_layout(height=300)
    assert fig.to_dict()["layout"]["height"] == 300 and as_json(fig)["layout"]["height"] == 300
    with pytest.raises(AttributeError):
        fig.no_such_attribute  # noqa: B018
    assert go.Figure(queues_figure(lab.view)) == go.Figure(as_json(queues_figure(lab.view)))
