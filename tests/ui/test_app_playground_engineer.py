"""The Playground as a vLLM engineer reads it (issue 48 items 4, 8, 9, 11): exact knobs, why the waiting queue
waits, a sidebar that says when it has unapplied changes, costs with their units."""

from __future__ import annotations

import re

from app_helpers import ok, open_tab


def test_preemption_costs_show_times_with_units_never_six_decimals(app):
    """Item 11: a swap's copy read `0.000005` (seconds, six decimals)."""
    for key, value in {"vllm_profile": "v0.6", "preemption_mode": "swap", "num_cpu_blocks": "24"}.items():
        app.query_params[key] = value
    app.query_params.update({"preset": "storm", "num_gpu_blocks": "24", "step": "12"})
    ok(app.run())
    assert app.session_state["lab"].view.preemptions, "the link reaches a preemption"
    costs = next(df.value for df in open_tab(app, "Preemption costs").dataframe if "swap out" in df.value.columns)
    swaps = costs[costs["mode"] == "swap"]
    assert len(swaps) and all(re.fullmatch(r"[\d,.]+ (µs|ms|s)", t) for t in swaps["swap out"]), swaps["swap out"]
    shown = [str(v) for v in costs.to_numpy().ravel()]
    assert not [v for v in shown if re.fullmatch(r"0\.0\d{4,}", v)], "a time in seconds to six decimals"
